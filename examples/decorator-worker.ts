/**
 * The decorator style with the model in worker threads: `createHost(C, { executor: 'worker' })`
 * builds the class and its context in every worker, so `session.run` never blocks this thread.
 * Each worker finds the class and the context by module path and export name, which is why both
 * are exported from this file (the workers load it too, without running `main`).
 *
 *   npx ts-node examples/decorator-worker.ts
 */
import 'reflect-metadata'; // before tsyringe, which checks for it when it loads
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { inject, injectable, type DependencyContainer } from 'tsyringe';
import { batching, createHost, OnnxSession, WorkerInfo, type WorkerContext } from 'microbatch';
import { mlpModel } from './support/models';

@injectable()
export class Embedder {
  constructor(@inject(OnnxSession) private readonly session: InferenceSession) {}

  @batching({ maxBatchSize: 256 })
  async predictBatch(rows: readonly Float32Array[]): Promise<Float32Array[]> {
    const x = new Float32Array(rows.length * 512);
    rows.forEach((r, i) => x.set(r, i * 512));
    const { Y } = await this.session.run({ X: new Tensor('float32', x, [rows.length, 512]) });
    const y = Y!.data as Float32Array;
    return rows.map((_, i) => y.slice(i * 64, (i + 1) * 64));
  }
}

/** Loaded in each worker: one session per worker, sized by the pool's thread budget. */
export const context = {
  [OnnxSession]: (c: DependencyContainer) =>
    InferenceSession.create(mlpModel([512, 1024, 1024, 64]), { intraOpNumThreads: c.resolve<WorkerContext>(WorkerInfo).intraOpNumThreads ?? 1 }),
};

async function main(): Promise<void> {
  const host = await createHost(Embedder, { context, executor: { workers: 2, intraOpNumThreads: 1 } });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const started = performance.now();
  const rows = Array.from({ length: 2048 }, (_, i) => new Float32Array(512).fill((i % 7) / 7));
  const out = await Promise.all(rows.map((r) => host.inference(r)));
  delay.disable();
  console.log(`${out.length} embeddings of ${out[0]!.length} floats in ${(performance.now() - started).toFixed(0)} ms`);
  console.log(`${host.stats.batches} batches (mean ${host.stats.meanBatchSize.toFixed(1)} rows) over 2 workers`);
  console.log(`event-loop delay on this thread while they ran: p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`);
  await host.stop(); // drains, then releases each worker's session and ends the threads
}

if (require.main === module) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
