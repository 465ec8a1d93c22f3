/**
 * The sides of the saturation scenario (shared with the event-loop scenario): 256 closed-loop
 * clients against (a) one `session.run` per request, (b) a microbatch host with the inline concat
 * batch function, (b') the same allocating a fresh input array per batch, (c) the worker executor
 * (ConcatBatcher on this thread, the batch moved to the session in worker threads), (d) back-to-back `session.run` on
 * pre-formed batches.
 */
import { join } from 'node:path';
import { ModelHost } from '../src/engine/model-host';
import { createHost } from '../src/api/create-host';
import { ConcatBatcher } from '../src/batchers/concat-batcher';
import type { TensorLike } from '../src/tensor/tensor-like';
import { closedLoop, now, type Side } from './harness';
import { concatBatchFn, preformedBatch, runOne, runRows, type BenchModel } from './models';

export const CLIENTS = 256;

export interface SatRep {
  readonly throughput: number;
  readonly meanBatchSize: number;
}

export const B = '(b) microbatch inline';
export const B_ALLOC = "(b') inline, fresh input array per batch";
export const C_ONE = '(c) worker executor, 1 worker × 2 threads';
export const C_TWO = '(c) worker executor, 2 workers × 1 thread';
export const C_PIPE = '(c) 1 worker × 1 thread, 2 batches in flight';

function workerSide(name: string, m: BenchModel, durationMs: number, workers: number, threads: number, inFlight = workers): Side<SatRep> {
  const tensors: TensorLike[] = m.items.map((data) => ({ type: 'float32', data, dims: [1, ...m.itemShape] }));
  return {
    name,
    async run() {
      const host = await createHost(join(__dirname, 'worker-model.ts'), {
        workerData: { model: m.key },
        workers,
        intraOpNumThreads: threads,
        maxBatchSize: m.maxBatchSize,
        maxConcurrentBatches: inFlight,
        batcher: new ConcatBatcher<TensorLike>(),
        // ConcatBatcher builds a fresh batch buffer, so it can move to the worker (docs/executors.md).
        transferBatch: true,
      });
      const r = await closedLoop({ clients: CLIENTS, durationMs, call: (i) => host.inference(tensors[i % tensors.length] as TensorLike) });
      const meanBatchSize = host.stats.meanBatchSize;
      await host.stop();
      if (r.failed > 0) throw new Error(`${r.failed} requests failed`);
      return { throughput: r.throughput, meanBatchSize };
    },
  };
}

function microbatchSide(name: string, m: BenchModel, durationMs: number, reuse: boolean): Side<SatRep> {
  return {
    name,
    async run() {
      const host = new ModelHost(concatBatchFn(m, reuse), { maxBatchSize: m.maxBatchSize });
      const r = await closedLoop({ clients: CLIENTS, durationMs, call: (i) => host.inference(m.items[i % m.items.length] as Float32Array) });
      const meanBatchSize = host.stats.meanBatchSize;
      await host.stop();
      if (r.failed > 0) throw new Error(`${r.failed} requests failed`);
      return { throughput: r.throughput, meanBatchSize };
    },
  };
}

/** The sides for one model; each repetition runs for `durationMs`. */
export function saturationSides(m: BenchModel, durationMs: number): Side<SatRep>[] {
  const item = (i: number): Float32Array => m.items[i % m.items.length] as Float32Array;
  const batch = preformedBatch(m);
  return [
    {
      name: '(a) unbatched',
      async run() {
        const r = await closedLoop({ clients: CLIENTS, durationMs, call: (i) => runOne(m, item(i)) });
        return { throughput: r.throughput, meanBatchSize: 1 };
      },
    },
    microbatchSide(B, m, durationMs, true),
    microbatchSide(B_ALLOC, m, durationMs, false),
    workerSide(C_ONE, m, durationMs, 1, 2),
    workerSide(C_TWO, m, durationMs, 2, 1),
    workerSide(C_PIPE, m, durationMs, 1, 1, 2),
    {
      name: '(d) limit: pre-formed batches',
      async run() {
        const start = now();
        let runs = 0;
        while (now() - start < durationMs) {
          await runRows(m, batch, m.maxBatchSize);
          runs++;
        }
        return { throughput: ((runs * m.maxBatchSize) / (now() - start)) * 1000, meanBatchSize: m.maxBatchSize };
      },
    },
  ];
}
