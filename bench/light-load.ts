/**
 * Scenario 3, light load: one closed-loop client. p50 and p99 latency of a microbatch host
 * (inline, greedy, maxDelayMs 0) against calling the model directly with one item. Target: added
 * p50 ≤ 0.1 ms inline, ≤ 0.5 ms through the worker executor (ConcatBatcher on this thread, the
 * session in one worker thread, the batch moved across).
 *
 *   npx ts-node bench/light-load.ts --quick
 */
import { join } from 'node:path';
import { createHost } from '../src/api/create-host';
import { ModelHost } from '../src/engine/model-host';
import { ConcatBatcher } from '../src/batchers/concat-batcher';
import type { TensorLike } from '../src/tensor/tensor-like';
import {
  alternate,
  closedLoop,
  fmt,
  main,
  median,
  pick,
  Progress,
  report,
  Samples,
  summarize,
  table,
  writeResults,
  type LatencySummary,
  type Side,
  type TargetResult,
} from './harness';
import { concatBatchFn, loadModels, runOne, type BenchModel } from './models';

interface Case {
  readonly name: string;
  readonly requests: number;
  readonly maxBatchSize: number;
  direct(i: number): Promise<unknown>;
  batchFn(items: readonly Float32Array[]): Promise<unknown[]>;
  item(i: number): Float32Array;
  /** The model, for the worker side (absent for the engine-only case). */
  readonly model?: BenchModel;
}

const WORKER = 'microbatch, worker';

main(async (args) => {
  const reps = args.reps ?? pick(args, 5, 9);
  const progress = new Progress('light-load', args.progress);
  const [mlp, cls] = await loadModels(['mlp', 'cls']);
  if (mlp === undefined || cls === undefined) throw new Error('models did not load');
  const one = new Float32Array(1);
  const cases: Case[] = [
    {
      // The engine alone: an async identity function called directly vs through a host.
      name: 'no model (async identity)',
      requests: pick(args, 20_000, 100_000),
      maxBatchSize: 64,
      direct: async (i) => i,
      batchFn: async (items) => items as unknown[],
      item: () => one,
    },
    ...[mlp, cls].map((m) => ({
      name: m.name,
      requests: m === cls ? pick(args, 300, 1500) : pick(args, 5_000, 30_000),
      maxBatchSize: m.maxBatchSize,
      direct: (i: number) => runOne(m, m.items[i % m.items.length] as Float32Array),
      batchFn: concatBatchFn(m),
      item: (i: number) => m.items[i % m.items.length] as Float32Array,
      model: m,
    })),
  ];

  const rows: (string | number)[][] = [];
  const targets: TargetResult[] = [];
  const data: Record<string, unknown> = {};
  for (const c of cases) {
    const sides: Side<LatencySummary>[] = [
      {
        name: 'direct',
        async run() {
          const lat = new Samples(c.requests);
          await closedLoop({ clients: 1, total: c.requests, latencies: lat, call: c.direct });
          return summarize(lat.values());
        },
      },
      {
        name: 'microbatch',
        async run() {
          const host = new ModelHost(c.batchFn, { maxBatchSize: c.maxBatchSize });
          const lat = new Samples(c.requests);
          await closedLoop({ clients: 1, total: c.requests, latencies: lat, call: (i) => host.inference(c.item(i)) });
          await host.stop();
          return summarize(lat.values());
        },
      },
    ];
    const m = c.model;
    if (m !== undefined) {
      const tensors: TensorLike[] = m.items.map((data) => ({ type: 'float32', data, dims: [1, ...m.itemShape] }));
      sides.push({
        name: WORKER,
        async run() {
          const host = await createHost(join(__dirname, 'worker-model.ts'), {
            workerData: { model: m.key },
            maxBatchSize: c.maxBatchSize,
            batcher: new ConcatBatcher<TensorLike>(),
            transferBatch: true,
          });
          const lat = new Samples(c.requests);
          await closedLoop({ clients: 1, total: c.requests, latencies: lat, call: (i) => host.inference(tensors[i % tensors.length] as TensorLike) });
          await host.stop();
          return summarize(lat.values());
        },
      });
    }
    const results = await alternate(sides, { reps, warmup: 1, progress, label: `${c.name} ` });
    const d = results.get('direct') ?? [];
    const b = results.get('microbatch') ?? [];
    // Paired per repetition (the two sides of a round ran back to back), then the median.
    const addedP50 = median(b.map((r, i) => r.p50 - (d[i] as LatencySummary).p50));
    const addedP99 = median(b.map((r, i) => r.p99 - (d[i] as LatencySummary).p99));
    const med = (rs: LatencySummary[], k: 'p50' | 'p99' | 'mean'): number => median(rs.map((r) => r[k]));
    rows.push([c.name, 'inline', fmt(med(d, 'p50'), 4), fmt(med(d, 'p99'), 4), fmt(med(b, 'p50'), 4), fmt(med(b, 'p99'), 4), fmt(addedP50, 4), fmt(addedP99, 4)]);
    const w = results.get(WORKER);
    let worker: Record<string, unknown> | undefined;
    if (m !== undefined && w !== undefined) {
      const wP50 = median(w.map((r, i) => r.p50 - (d[i] as LatencySummary).p50));
      const wP99 = median(w.map((r, i) => r.p99 - (d[i] as LatencySummary).p99));
      rows.push([c.name, 'worker', '', '', fmt(med(w, 'p50'), 4), fmt(med(w, 'p99'), 4), fmt(wP50, 4), fmt(wP99, 4)]);
      targets.push({ name: `light load ${c.name}: added p50 (ms), inline`, value: addedP50, target: '≤ 0.1 ms', pass: addedP50 <= 0.1 });
      targets.push({ name: `light load ${c.name}: added p50 (ms), worker`, value: wP50, target: '≤ 0.5 ms', pass: wP50 <= 0.5 });
      worker = { sides: w, addedP50: wP50, addedP99: wP99 };
    }
    data[c.name] = { requestsPerRep: c.requests, direct: d, microbatch: b, addedP50, addedP99, worker };
  }
  progress.done();
  report(
    `Light load: one closed-loop client, maxDelayMs 0, latency in ms (median over ${reps} reps)`,
    [{ text: table(['model', 'host', 'direct p50', 'direct p99', 'microbatch p50', 'microbatch p99', 'added p50', 'added p99'], rows) }],
    targets,
  );
  writeResults('light-load', args, { reps, cases: data }, targets);
});
