/**
 * Scenario: the lifecycle options, side by side in one run on the PaddleOCR classifier, inline.
 *
 * 1. Response cache on repeated inputs: 64 closed-loop clients draw their inputs from a pool of
 *    16 images (every input repeats), with and without `cache: true`: requests/s and p50/p99.
 * 2. Warm-up: a fresh session and host per repetition; the first 128 requests after start, as
 *    4 bursts of 32, with and without `warmup` (one batch of each size 1, 2, 4, ..., 32):
 *    p50/p99/max of those first requests, and how long start took.
 *
 *   npx ts-node bench/lifecycle.ts --quick
 */
import { ModelHost } from '../src/engine/model-host';
import { loadSession } from '../src/onnx/load-session';
import { alternate, closedLoop, fmt, main, median, pick, Progress, ratio, report, Samples, summarize, table, writeResults, type Side, type TargetResult } from './harness';
import { CLS_PATH, concatBatchFn, loadCls, type BenchModel } from './models';

interface CacheRep {
  readonly throughput: number;
  readonly p50: number;
  readonly p99: number;
  readonly batches: number;
}

interface WarmRep {
  readonly startMs: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

const POOL = 16;
const FIRST = 128;

main(async (args) => {
  const progress = new Progress('lifecycle', args.progress);
  const reps = args.reps ?? pick(args, 3, 7);
  const m = await loadCls();
  const pool = m.items.slice(0, POOL) as Float32Array[];

  // 1. Cache on repeated inputs.
  const cacheSide = (name: string, cache: boolean): Side<CacheRep> => ({
    name,
    async run() {
      const host = new ModelHost(concatBatchFn(m), { maxBatchSize: m.maxBatchSize, ...(cache ? { cache: true } : {}) });
      const latencies = new Samples();
      const r = await closedLoop({ clients: 64, durationMs: pick(args, 1500, 3000), latencies, call: (i) => host.inference(pool[i % POOL] as Float32Array) });
      const batches = host.stats.batches;
      await host.stop();
      const s = summarize(latencies.values());
      return { throughput: r.throughput, p50: s.p50, p99: s.p99, batches };
    },
  });
  const cacheSides = [cacheSide('no cache', false), cacheSide('cache: true', true)];
  const cacheResults = await alternate(cacheSides, { reps, warmup: 1, progress, label: 'cache ' });

  // 2. Warm-up: a fresh session per repetition, so every host meets a cold model.
  const warmSide = (name: string, warm: boolean): Side<WarmRep> => ({
    name,
    async run() {
      const session = await loadSession(CLS_PATH);
      const fresh: BenchModel = { ...m, session };
      const t0 = performance.now();
      const host = new ModelHost(concatBatchFn(fresh), {
        maxBatchSize: m.maxBatchSize,
        ...(warm ? { warmup: { samples: pool } } : {}),
      });
      await host.start();
      const startMs = performance.now() - t0;
      // The first requests come as bursts of a full batch, so the cold side meets its first
      // full-size run (the size whose buffers and kernels a warm-up prepares) with callers waiting.
      const first: number[] = [];
      for (let burst = 0; burst < FIRST / m.maxBatchSize; burst++) {
        const s = performance.now();
        await Promise.all(
          Array.from({ length: m.maxBatchSize }, (_, i) => host.inference(pool[i % POOL] as Float32Array).then(() => first.push(performance.now() - s))),
        );
      }
      await host.stop();
      await session.release();
      const s = summarize(first);
      return { startMs, p50: s.p50, p99: s.p99, max: s.max };
    },
  });
  const warmSides = [warmSide('no warm-up', false), warmSide('warmup (1, 2, 4, ..., 32)', true)];
  const warmResults = await alternate(warmSides, { reps, warmup: 1, progress, label: 'warm-up ' });
  progress.done();

  const med = <R>(results: Map<string, R[]>, name: string, key: keyof R): number => median((results.get(name) ?? []).map((r) => r[key] as number));
  /** One table row per side: its name, then the median of each column, with its digits. */
  const rowsOf = <R>(sides: ReadonlyArray<Side<R>>, results: Map<string, R[]>, columns: ReadonlyArray<readonly [keyof R, number]>): string[][] =>
    sides.map((s) => [s.name, ...columns.map(([key, digits]) => fmt(med(results, s.name, key), digits))]);
  const cacheRows = rowsOf(cacheSides, cacheResults, [['throughput', 0], ['p50', 2], ['p99', 2], ['batches', 0]]);
  const warmRows = rowsOf(warmSides, warmResults, [['startMs', 1], ['p50', 2], ['p99', 2], ['max', 2]]);
  const speedup = ratio(med(cacheResults, 'cache: true', 'throughput'), med(cacheResults, 'no cache', 'throughput'));
  const firstP99 = ratio(med(warmResults, 'warmup (1, 2, 4, ..., 32)', 'p99'), med(warmResults, 'no warm-up', 'p99'));
  const targets: TargetResult[] = [
    { name: 'lifecycle: cache on repeated inputs, requests/s vs no cache', value: speedup, target: '> 1 (report)', pass: speedup > 1 },
    { name: `lifecycle: p99 of the first ${FIRST} requests, warm-up / none`, value: firstP99, target: '< 1 (report)', pass: firstP99 < 1 },
  ];
  report(
    `Lifecycle: PaddleOCR classifier inline, median of ${reps}`,
    [
      { heading: `Response cache: 64 closed-loop clients, inputs from a pool of ${POOL}`, text: table(['side', 'requests/s', 'p50 ms', 'p99 ms', 'batches'], cacheRows) },
      { heading: `Warm-up: the first ${FIRST} requests after start, in bursts of ${m.maxBatchSize}, fresh session per rep`, text: table(['side', 'start ms', 'first p50 ms', 'first p99 ms', 'first max ms'], warmRows) },
    ],
    targets,
  );
  writeResults('lifecycle', args, { model: m.name, pool: POOL, first: FIRST, reps, cache: Object.fromEntries(cacheResults), warmup: Object.fromEntries(warmResults) }, targets);
});
