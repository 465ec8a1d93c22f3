import { join } from 'node:path';
import { isMainThread, threadId } from 'node:worker_threads';
import { injectable } from 'tsyringe';
import { batching } from '../../src/api/batching';
import { createHost } from '../../src/api/create-host';
import { DeadlineExceededError } from '../../src/core/errors';
import { WorkerCrashedError, WorkerStartError } from '../../src/executors/worker/errors';
import { linearReference } from '../support/onnx-models';
import { Scorer, context } from '../fixtures/workers/hosted-scorer';

const classModule = require.resolve('../fixtures/workers/hosted-scorer');
const where = { classModule, contextModule: classModule };

describe("createHost(C, { executor: 'worker' })", () => {
  test('builds the class and its context in each worker; results equal the model; batches run off this thread', async () => {
    expect(isMainThread).toBe(true);
    // Found automatically: both are exports of a loaded module.
    const host = await createHost(Scorer, { context, executor: { workers: 2, intraOpNumThreads: 1 } });
    expect(host.options.maxConcurrentBatches).toBe(2);
    const rows = Array.from({ length: 64 }, (_, i) => Float32Array.from([i, 1, -i / 2, 3]));
    const out = await Promise.all(rows.map((r) => host.inference(r)));
    out.forEach((o, i) => {
      if (o instanceof Error) throw o;
      linearReference(rows[i]!).forEach((v, j) => expect(o.y[j]).toBeCloseTo(v, 5));
      expect(o.thread).not.toBe(threadId);
    });
    expect(new Set(out.map((o) => (o as { worker: number }).worker))).toEqual(new Set([0, 1]));
    expect(host.stats.batches).toBeLessThan(64);
    await host.stop();
  });

  test('reload() starts new workers that build the class and context afresh, then retires the old ones; a new context cannot be sent', async () => {
    const host = await createHost(Scorer, { context, executor: { ...where, workers: 1, intraOpNumThreads: 1 } });
    try {
      const row = Float32Array.from([1, 2, 3, 4]);
      const before = await host.inference(row);
      if (before instanceof Error) throw before;
      await host.reload({ version: 'b' });
      const after = await host.inference(row);
      if (after instanceof Error) throw after;
      expect(after.thread).not.toBe(before.thread);
      linearReference(row).forEach((v, j) => expect(after.y[j]).toBeCloseTo(v, 5));
      expect(host.version).toBe('b');
      await expect(host.reload({ context })).rejects.toThrow(
        new TypeError("createHost(Scorer).reload: a new `context` cannot be sent to worker threads; change what the exported context's providers load, then reload() without one"),
      );
    } finally {
      await host.stop();
    }
  });

  test('a batch that throws in the worker rejects only that batch; the host keeps serving', async () => {
    const host = await createHost(Scorer, { context, executor: { ...where, contextExport: 'context' } });
    await expect(host.inference(Float32Array.from([-999, 0, 0, 0]))).rejects.toThrow('poisoned batch');
    await expect(host.inference(Float32Array.from([1, 2, 3, 4]))).resolves.toMatchObject({ worker: 0 });
    await host.stop();
  });

  test('a worker whose model class exits mid-batch rejects only that batch; the other worker keeps serving and a replacement takes over', async () => {
    // One row per batch, so that the crash and the good rows are separate batches on two workers.
    const host = await createHost(Scorer, { context, executor: { workers: 2, intraOpNumThreads: 1 }, maxBatchSize: 1 });
    try {
      const rows = [-777, 1, 2, 3, 4, 5].map((v) => Float32Array.from([v, 1, -v / 2, 3]));
      const [crashed, ...others] = await Promise.allSettled(rows.map((r) => host.inference(r)));
      expect(crashed!.status).toBe('rejected');
      const e = (crashed as PromiseRejectedResult).reason as WorkerCrashedError;
      expect(e).toBeInstanceOf(WorkerCrashedError);
      expect(e.exitCode).toBe(7);
      expect(e.message).toMatch(/: worker [01] exited with code 7 while running this request's batch; the batch was rejected and the worker is being replaced$/);
      others.forEach((r, i) => {
        expect(r.status).toBe('fulfilled');
        const o = (r as PromiseFulfilledResult<{ y: number[] }>).value;
        linearReference(rows[i + 1]!).forEach((v, j) => expect(o.y[j]).toBeCloseTo(v, 5));
      });
      const next = Float32Array.from([1, 2, 3, 4]);
      const y = (await host.inference(next)) as { y: number[] };
      linearReference(next).forEach((v, j) => expect(y.y[j]).toBeCloseTo(v, 5));
      // The replacement comes up (ts-node makes that take a while here): pairs of concurrent
      // one-row batches soon run on both workers again.
      const deadline = Date.now() + 15_000;
      let workersSeen = new Set<number>();
      while (workersSeen.size < 2 && Date.now() < deadline) {
        const pair = await Promise.all([next, next].map((r) => host.inference(r)));
        workersSeen = new Set(pair.map((o) => (o as { worker: number }).worker));
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(workersSeen).toEqual(new Set([0, 1]));
    } finally {
      await host.stop();
    }
  }, 30_000);

  test('batchTimeoutMs given to createHost reaches the pool: a hung batch rejects its callers and the worker is replaced', async () => {
    const host = await createHost(Scorer, { context, executor: 'worker', batchTimeoutMs: 1_000 });
    try {
      const first = (await host.inference(Float32Array.from([1, 2, 3, 4]))) as { thread: number };
      const started = Date.now();
      const hung = await Promise.allSettled([host.inference(Float32Array.from([-555, 0, 0, 0])), host.inference(Float32Array.from([2, 2, 2, 2]))]);
      expect(Date.now() - started).toBeLessThan(10_000); // the spin would last 20 s
      for (const r of hung) {
        const e = (r as PromiseRejectedResult).reason as DeadlineExceededError;
        expect(e).toBeInstanceOf(DeadlineExceededError);
        expect(e.reason).toBe('batch-timeout');
        expect(e.message).toBe('Scorer.predictBatch: worker 0 ran a batch longer than batchTimeoutMs (1000 ms); the batch was rejected and the worker is being replaced');
      }
      const next = (await host.inference(Float32Array.from([1, 2, 3, 4]))) as { thread: number };
      expect(next.thread).not.toBe(first.thread);
    } finally {
      await host.stop();
    }
  }, 30_000);

  test('a provider that fails in the worker rejects createHost with a WorkerStartError naming the token', async () => {
    const { failingContext } = await import('../fixtures/workers/hosted-scorer');
    const e = (await createHost(Scorer, { context: failingContext, executor: { ...where, contextExport: 'failingContext' } }).catch((x: unknown) => x)) as WorkerStartError;
    expect(e).toBeInstanceOf(WorkerStartError);
    expect(e.message).toContain('Symbol(test.WorkerIndex)');
    expect(e.message).toContain('no GPU in this worker');
    // The worker's own error rides along: the provider failure, and under it the provider's error.
    const cause = e.cause as Error;
    expect(cause.name).toBe('ContextProviderError');
    expect((cause.cause as Error).message).toBe('no GPU in this worker');
  });

  test('a class module path that does not exist rejects createHost with the worker\'s error', async () => {
    const missing = join(__dirname, 'no-such-scorer.js');
    const e = (await createHost(Scorer, { context, executor: { classModule: missing, classExport: 'Scorer', contextModule: classModule } }).catch((x: unknown) => x)) as WorkerStartError;
    expect(e).toBeInstanceOf(WorkerStartError);
    expect(e.message).toContain(`Scorer.predictBatch: worker 0 failed to start: Cannot find module '${missing}'`);
    expect(e.workerIndex).toBe(0);
  });

  test('a class or context that no module exports gets a message saying how to fix it', async () => {
    @injectable()
    class Local {
      @batching(4)
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    await expect(createHost(Local, { executor: 'worker' })).rejects.toThrow(
      new TypeError(
        "createHost(Local): with executor 'worker', each worker loads the class Local by module path and export name, but it is not among the exports of any loaded module. Export it from its module, or pass executor: { classModule, classExport }.",
      ),
    );
    await expect(createHost(Scorer, { context: { ...context }, executor: 'worker' })).rejects.toThrow(
      /each worker loads the context by module path and export name.*Context providers are functions and cannot be sent to a thread/,
    );
  });

  test('rejects unknown worker options and bad executor values', async () => {
    await expect(createHost(Scorer, { executor: { workerz: 2 } as never })).rejects.toThrow(
      new TypeError(
        'createHost(Scorer): executor: unknown option `workerz`; the known options are `workers`, `intraOpNumThreads`, `resourceLimits`, `transferBatch`, `startTimeoutMs`, `stopTimeoutMs`, `classModule`, `classExport`, `contextModule`, `contextExport`',
      ),
    );
    await expect(createHost(Scorer, { executor: 'gpu' as never })).rejects.toThrow(
      "createHost(Scorer): expected `executor` to be 'inline', 'worker', an object of worker options, or an executor object with a run(batch) method, got \"gpu\" (string)",
    );
  });
});
