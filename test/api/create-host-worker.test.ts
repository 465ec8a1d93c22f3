import { isMainThread, threadId } from 'node:worker_threads';
import { injectable } from 'tsyringe';
import { batching } from '../../src/api/batching';
import { createHost } from '../../src/api/create-host';
import { WorkerStartError } from '../../src/executors/worker/errors';
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

  test('a batch that throws in the worker rejects only that batch; the host keeps serving', async () => {
    const host = await createHost(Scorer, { context, executor: { ...where, contextExport: 'context' } });
    await expect(host.inference(Float32Array.from([-999, 0, 0, 0]))).rejects.toThrow('poisoned batch');
    await expect(host.inference(Float32Array.from([1, 2, 3, 4]))).resolves.toMatchObject({ worker: 0 });
    await host.stop();
  });

  test('a provider that fails in the worker rejects createHost with a WorkerStartError naming the token', async () => {
    const { failingContext } = await import('../fixtures/workers/hosted-scorer');
    const e = (await createHost(Scorer, { context: failingContext, executor: { ...where, contextExport: 'failingContext' } }).catch((x: unknown) => x)) as WorkerStartError;
    expect(e).toBeInstanceOf(WorkerStartError);
    expect(e.message).toContain('Symbol(test.WorkerIndex)');
    expect(e.message).toContain('no GPU in this worker');
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
      "createHost(Scorer): expected `executor` to be 'inline', 'worker' or an object of worker options, got \"gpu\" (string)",
    );
  });
});
