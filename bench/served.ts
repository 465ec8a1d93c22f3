/**
 * Scenario: `microbatch serve` against the raw model, side by side in one run. The PaddleOCR
 * classifier served with the CLI's defaults (one worker thread, its onnxruntime threads as the CLI
 * picks them), loaded by wrk (64 connections, one wrk thread, Triton's binary tensor extension:
 * one `[1, 3, 48, 192]` FP32 item per request, a JSON answer), against the same model run on
 * pre-formed batches of 32 in this process with the same onnxruntime threads. Then the p99 at 32
 * connections. Each repetition starts a fresh server. With `SERVED_BEFORE=<checkout>` (a built
 * checkout: `npm run build` there) its `microbatch serve` runs as a third side, alternating.
 * `SERVED_PROF=<dir>` runs the servers under `--cpu-prof` and writes the profiles there;
 * `SERVE_ARGS='--heap-ballast-mb 0'` adds flags to every server.
 *
 * Needs wrk (Debian: apt-get install -y wrk).
 *
 *   SERVED_BEFORE=/tmp/before npx ts-node bench/served.ts --quick
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { loadSession } from '../src/onnx/load-session';
import { sharedMachineThreads } from '../src/executors/worker/thread-budget';
import { alternate, fmt, main, median, now, pick, Progress, report, table, writeResults, type Side } from './harness';
import { CLS_PATH } from './models';
import { cpuSeconds, startServe, stopServe } from './serve-process';

const ITEM_SHAPE = [3, 48, 192] as const;
const ITEM_SIZE = 3 * 48 * 192;
const BATCH = 32;

interface Rep {
  /** Requests (served) or items (raw) per second. */
  readonly throughput: number;
  /** ms, wrk's latency distribution at 64 connections (served only). */
  readonly p50?: number;
  readonly p99?: number;
  /** ms, at 32 connections (served only). */
  readonly p99At32?: number;
  readonly errors?: number;
  /** Cores busy during the 64-connection run: the server's main thread, its other threads, wrk. */
  readonly mainCores?: number;
  readonly otherCores?: number;
  readonly wrkCores?: number;
}


/** wrk's `--latency` figures in ms, and its request rate. */
function parseWrk(text: string): { rps: number; p50: number; p99: number; errors: number; cpu: number } {
  const ms = (v: string, unit: string): number => Number(v) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1);
  const pct = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(text);
    return m === null ? Number.NaN : ms(m[1]!, m[2]!);
  };
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(text);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(text);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const errors = Number(non2xx?.[1] ?? 0) + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((n, v) => n + Number(v), 0));
  // `times`: "0m1.234s 0m0.567s" (children's user and system time).
  const times = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(text);
  const cpu = times === null ? Number.NaN : Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4]);
  return { rps: Number(rps?.[1] ?? Number.NaN), p50: pct('50'), p99: pct('99'), errors, cpu };
}

/** CPU seconds (user + system) of a process's threads so far: [main thread, all threads]. */
function threadCpu(pid: number): [number, number] {
  let all = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) all += cpuSeconds(`/proc/${pid}/task/${tid}/stat`);
  return [cpuSeconds(`/proc/${pid}/task/${pid}/stat`), all];
}

/** wrk's run; bash's `times` adds wrk's own CPU seconds (user, system) as a last line. */
function wrk(url: string, script: string, connections: number, seconds: number): Promise<string> {
  return new Promise((done, fail) => {
    const command = `wrk -t1 -c${connections} -d${seconds}s --latency -s '${script}' '${url}' && times`;
    const child = spawn('bash', ['-c', command], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? done(out) : fail(new Error(`wrk exited ${String(code)}: ${out}`))));
  });
}

main(async (args) => {
  if (spawnSync('wrk', ['--version']).error !== undefined) throw new Error('the served scenario needs wrk (Debian: apt-get install -y wrk)');
  const reps = args.reps ?? pick(args, 3, 5);
  const seconds = pick(args, 5, 10);
  const before = process.env.SERVED_BEFORE;
  const profDir = process.env.SERVED_PROF;
  const progress = new Progress('served', args.progress);
  const dir = mkdtempSync(join(tmpdir(), 'mb-served-'));

  // One request: the JSON header, then the item's bytes.
  const item = Float32Array.from({ length: ITEM_SIZE }, (_, i) => Math.sin(i) * 0.5);
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'x', shape: [1, ...ITEM_SHAPE], datatype: 'FP32', parameters: { binary_data_size: item.byteLength } }] }));
  writeFileSync(join(dir, 'body.bin'), Buffer.concat([header, Buffer.from(item.buffer)]));
  const script = join(dir, 'infer.lua');
  writeFileSync(
    script,
    [
      'wrk.method = "POST"',
      'wrk.headers["Content-Type"] = "application/octet-stream"',
      `wrk.headers["Inference-Header-Content-Length"] = "${header.length}"`,
      `local f = io.open("${join(dir, 'body.bin')}", "rb")`,
      'wrk.body = f:read("*a")',
      'f:close()',
      '',
    ].join('\n'),
  );

  // The raw model: the threads one worker gets from the CLI's default split, pre-formed batches.
  const threads = sharedMachineThreads(availableParallelism(), 1);
  const session = await loadSession(CLS_PATH, { intraOpNumThreads: threads });
  const batch = new Float32Array(BATCH * ITEM_SIZE);
  for (let i = 0; i < BATCH; i++) batch.set(item, i * ITEM_SIZE);
  const feeds = { x: new ort.Tensor('float32', batch, [BATCH, ...ITEM_SHAPE]) };
  const raw: Side<Rep> = {
    name: `raw model (batches of ${BATCH}, ${threads} onnxruntime thread${threads === 1 ? '' : 's'})`,
    async run() {
      const t0 = now();
      let items = 0;
      while (now() - t0 < seconds * 1000) {
        await session.run(feeds);
        items += BATCH;
      }
      return { throughput: items / ((now() - t0) / 1000) };
    },
  };
  const served = (name: string, tree: string): Side<Rep> => ({
    name,
    async run() {
      const { child, httpPort: port } = await startServe(tree, [CLS_PATH, '--port', '0', '--name', 'cls', '--log-level', 'warn'], profDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profDir]);
      const url = `http://127.0.0.1:${port}/v2/models/cls/infer`;
      try {
        await wrk(url, script, 64, 1); // warm: the first batches of each size pay onnxruntime's first run
        const [main0, all0] = threadCpu(child.pid!);
        const at64 = parseWrk(await wrk(url, script, 64, seconds));
        const [main1, all1] = threadCpu(child.pid!);
        const at32 = parseWrk(await wrk(url, script, 32, Math.max(2, Math.round(seconds / 2))));
        return {
          throughput: at64.rps,
          p50: at64.p50,
          p99: at64.p99,
          p99At32: at32.p99,
          errors: at64.errors + at32.errors,
          mainCores: (main1 - main0) / seconds,
          otherCores: (all1 - all0 - (main1 - main0)) / seconds,
          wrkCores: at64.cpu / seconds,
        };
      } finally {
        await stopServe(child);
      }
    },
  });
  const sides: Array<Side<Rep>> = [raw, served('microbatch serve', resolve(__dirname, '..'))];
  if (before !== undefined) sides.push(served(`microbatch serve (${before})`, resolve(before)));

  let results: Map<string, Rep[]>;
  try {
    results = await alternate(sides, { reps, warmup: 1, progress });
  } finally {
    progress.done();
    await session.release();
    rmSync(dir, { recursive: true, force: true });
  }
  const med = (name: string, key: keyof Rep): number => median((results.get(name) ?? []).map((r) => r[key] ?? Number.NaN));
  const base = med(raw.name, 'throughput');
  const rows = sides.map((s) => [
    s.name,
    fmt(med(s.name, 'throughput'), 0),
    `${fmt(med(s.name, 'throughput') / base, 2)}×`,
    s === raw ? '' : fmt(med(s.name, 'p50'), 1),
    s === raw ? '' : fmt(med(s.name, 'p99'), 1),
    s === raw ? '' : fmt(med(s.name, 'p99At32'), 1),
    s === raw ? '' : String((results.get(s.name) ?? []).reduce((n, r) => n + (r.errors ?? 0), 0)),
    s === raw ? '' : `${fmt(med(s.name, 'mainCores'), 2)} / ${fmt(med(s.name, 'otherCores'), 2)} / ${fmt(med(s.name, 'wrkCores'), 2)}`,
  ]);
  report(`microbatch serve against the raw model (PaddleOCR classifier, wrk -t1, binary tensors, medians of ${reps} × ${seconds} s)`, [
    { text: table(['side', 'req/s (items/s raw)', '× raw', 'p50 ms @64', 'p99 ms @64', 'p99 ms @32', 'errors', 'cores: main / other threads / wrk'], rows) },
  ]);
  writeResults('served', args, {
    seconds,
    threads,
    ratio: med(sides[1]!.name, 'throughput') / base,
    sides: Object.fromEntries(sides.map((s) => [s.name, results.get(s.name)])),
  });
});
