import type { Browser, Page } from 'playwright-core';
import { call } from '../http/helpers';
import { describeWithChromium, launchChromium } from './browser';
import { bucketed, load, metricsHistogram, sample, serveLinear, spawnServe, type Served, useLinearModel } from './served';

// The dashboard in a real browser: Debian's Chromium, headless, reading the page and its stream
// from a real server with a real ONNX model, its numbers checked against /metrics.

// The page's `document`, as far as the functions these tests run in the page use it (tsconfig has no DOM lib).
declare const document: { querySelector(selector: string): { readonly textContent: string | null; getAttribute(name: string): string | null } | null };

const linear = useLinearModel();
let browser: Browser;

/** Waits until `[data-model=model] [data-field=name]` reads `want` (the page updates once a second). */
async function field(page: Page, model: string, name: string, want: string): Promise<string> {
  const sel = `[data-model="${model}"] [data-field="${name}"]`;
  await page.waitForFunction(({ sel, want }) => document.querySelector(sel)?.textContent === want, { sel, want }, { timeout: 15_000 });
  return (await page.textContent(sel)) ?? '';
}

/**
 * After `requests` answered requests to `model`: the page shows that count, and its batch-size
 * table, bucketed by /metrics' bounds, equals /metrics' histogram (and its rows sum too).
 */
async function expectPageToShow(page: Page, port: number, model: string, requests: number): Promise<void> {
  expect(await field(page, model, 'requests', String(requests))).toBe(String(requests));
  const metrics = (await call(port, 'GET', '/metrics')).text;
  expect(sample(metrics, 'microbatch_requests_total', `host="${model}",outcome="ok"`)).toBe(requests);
  // Every batch has reached the page once its batches total equals /metrics' count.
  await field(page, model, 'batches', String(sample(metrics, 'microbatch_batch_size_count', `host="${model}"`)));
  const bySize = await page.$$eval(`[data-model="${model}"] [data-field="batch-sizes"] td[data-size]`, (cells) =>
    cells.map((c) => [Number(c.getAttribute('data-size')), Number(c.textContent)] as const),
  );
  expect(bySize.some(([size]) => size > 1)).toBe(true); // concurrent requests were batched
  const histogram = metricsHistogram(metrics, model);
  expect(histogram.at(-1)?.[0]).toBe('+Inf');
  expect(bucketed(bySize, histogram.map(([le]) => le))).toEqual(histogram);
  expect(bySize.reduce((n, [size, c]) => n + size * c, 0)).toBe(sample(metrics, 'microbatch_batch_size_sum', `host="${model}"`));
}

describeWithChromium('the dashboard in headless Chromium', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  test('names the served models, and after 200 requests shows 200 and the batch histogram /metrics shows', async () => {
    const served = await serveLinear(linear(), 'linear');
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    try {
      const answer = await page.goto(`http://127.0.0.1:${served.port}/dashboard`);
      expect(answer?.status()).toBe(200);
      expect(page.url()).toBe(`http://127.0.0.1:${served.port}/dashboard/`);
      expect(await field(page, 'linear', 'name', 'linear')).toBe('linear');
      expect(await page.getAttribute('#status', 'data-state')).toBe('live');
      await load(served.port, 'linear', 200);
      await expectPageToShow(page, served.port, 'linear', 200);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await served.server.close();
    }
  }, 60_000);

  test('the stream reconnects after the server restarts on the same port', async () => {
    let served: Served = await serveLinear(linear(), 'first');
    const port = served.port;
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${port}/dashboard/`);
      await field(page, 'first', 'name', 'first');
      expect(await page.getAttribute('#status', 'data-connects')).toBe('1');
      await served.server.close();
      await page.waitForFunction(() => document.querySelector('#status')?.getAttribute('data-state') === 'reconnecting', undefined, { timeout: 15_000 });
      served = await serveLinear(linear(), 'second', port);
      // The same page, without a reload, now shows the new server's model, and drops the old one.
      await field(page, 'second', 'name', 'second');
      expect(await page.getAttribute('#status', 'data-state')).toBe('live');
      expect(Number(await page.getAttribute('#status', 'data-connects'))).toBeGreaterThanOrEqual(2);
      expect(await page.$('[data-model="first"]')).toBeNull();
    } finally {
      await page.close();
      await served.server.close();
    }
  }, 60_000);

  test('microbatch serve shows it by default: the model, 200 requests and the histogram of /metrics; --no-dashboard turns it off', async () => {
    const served = await spawnServe([linear(), '--name', 'lin', '--max-batch-size', '8', '--workers', '1', '--threads', '1']);
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${served.port}/dashboard`);
      expect(await field(page, 'lin', 'name', 'lin')).toBe('lin');
      await load(served.port, 'lin', 200);
      await expectPageToShow(page, served.port, 'lin', 200);
      expect(await served.stop()).toBe(0); // the open page's stream does not hold up the draining exit
    } finally {
      await page.close();
      await served.stop();
    }
    const off = await spawnServe([linear(), '--name', 'lin', '--workers', '0', '--no-dashboard']);
    try {
      const r = await call(off.port, 'GET', '/dashboard/');
      expect([r.status, r.json().code]).toEqual([404, 'not_found']);
    } finally {
      expect(await off.stop()).toBe(0);
    }
  }, 90_000);
});
