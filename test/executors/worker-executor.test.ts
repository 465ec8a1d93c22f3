import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ModelHost } from '../../src/engine/model-host';
import { DeadlineExceededError, HostStoppedError } from '../../src/core/errors';
import { createHost } from '../../src/api/create-host';
import { createWorkerHost } from '../../src/api/create-worker-host';
import { WorkerCrashedError, WorkerExecutor, WorkerStartError } from '../../src/executors/worker';
import type { Answer, Op } from '../fixtures/workers/behaviours.worker';

// The worker executor's contract, with a JS fixture whose batch function misbehaves on request
// (no model needed): failures reject only what they must, crashed and hung workers are replaced,
// start failures say what was wrong, and stop leaves nothing running.

const MODULE = join(__dirname, '../fixtures/workers/behaviours.worker.ts');
const echo = (value: number): Op => ({ op: 'echo', value });

describe('one worker, failures contained', () => {
  let host: ModelHost<Op, Answer>;
  let executor: WorkerExecutor<readonly Op[], Array<Answer | Error>>;

  beforeAll(async () => {
    executor = new WorkerExecutor({ module: MODULE, workers: 1, name: 'behaviours' });
    host = new ModelHost<Op, Answer>(executor, { maxBatchSize: 8, maxConcurrentBatches: executor.workers });
    await host.start();
  });
  afterAll(() => host.stop());

  test('concurrent callers form one batch and each gets its own answer', async () => {
    const answers = await Promise.all([1, 2, 3, 4].map((v) => host.inference(echo(v))));
    expect(answers.map((a) => a.value)).toEqual([2, 4, 6, 8]);
    expect(answers.every((a) => a.batchSize === 4)).toBe(true);
  });

  test('an Error item in the result rejects only its caller, as a TypeError with its message', async () => {
    const [good, bad, other] = await Promise.allSettled([host.inference(echo(1)), host.inference({ op: 'item-error', value: 7 }), host.inference(echo(3))]);
    expect(good).toMatchObject({ status: 'fulfilled', value: { value: 2, batchSize: 3 } });
    expect(other).toMatchObject({ status: 'fulfilled', value: { value: 6 } });
    expect(bad.status).toBe('rejected');
    const error = (bad as PromiseRejectedResult).reason as Error;
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('item 7 is not acceptable');
    expect(error.stack).toContain('behaviours.worker.ts');
  });

  test('a batch that throws rejects that batch only, with name, message, stack and properties', async () => {
    const poisoned = await Promise.allSettled([host.inference(echo(1)), host.inference({ op: 'throw', value: 0 })]);
    for (const r of poisoned) {
      expect(r.status).toBe('rejected');
      const e = (r as PromiseRejectedResult).reason as Error & { code?: string };
      expect(e).toBeInstanceOf(RangeError);
      expect(e.message).toBe('the batch contained a poisoned item');
      expect(e.code).toBe('E_POISON');
      expect(e.stack).toContain('behaviours.worker.ts');
    }
    await expect(host.inference(echo(5))).resolves.toMatchObject({ value: 10, batchSize: 1 });
  });

  test('a worker that exits mid-batch rejects only that batch, naming the exit code; the next request runs on a replacement', async () => {
    const before = await host.inference(echo(1));
    const crashed = await Promise.allSettled([host.inference(echo(2)), host.inference({ op: 'exit', value: 0 })]);
    for (const r of crashed) {
      expect(r.status).toBe('rejected');
      const e = (r as PromiseRejectedResult).reason as WorkerCrashedError;
      expect(e).toBeInstanceOf(WorkerCrashedError);
      expect(e.exitCode).toBe(3);
      expect(e.workerIndex).toBe(0);
      expect(e.message).toMatch(/worker 0 exited with code 3 while running/);
    }
    const after = await host.inference(echo(4));
    expect(after.value).toBe(8);
    expect(after.threadId).not.toBe(before.threadId);
    expect(executor.stats.replaced).toBe(1);
  });
});

test('createWorkerHost (deprecated: createHost(module, options)) still builds a host whose batches run in the workers', async () => {
  const host = await createWorkerHost<Op, Answer>({ module: MODULE, workers: 2, maxBatchSize: 2 });
  try {
    expect(host.options.maxConcurrentBatches).toBe(2);
    expect(await host.inference(echo(5))).toMatchObject({ value: 10 });
  } finally {
    await host.stop();
  }
});

test('createHost(module) refuses an executor other than worker threads', async () => {
  await expect(createHost(MODULE, { executor: 'inline' as never, maxBatchSize: 2 })).rejects.toThrow(TypeError);
});

test('two workers run two batches at once (overlap seen in the workers\' own timestamps)', async () => {
  const host = await createHost<Op, Answer>(MODULE, { workers: 2, maxBatchSize: 2 });
  try {
    expect(host.options.maxConcurrentBatches).toBe(2);
    const answers = await Promise.all([1, 2, 3, 4].map(() => host.inference({ op: 'sleep', value: 300 })));
    const byWorker = new Map<number, Answer>();
    for (const a of answers) byWorker.set(a.workerIndex, a);
    expect([...byWorker.keys()].sort()).toEqual([0, 1]);
    const [a, b] = [byWorker.get(0)!, byWorker.get(1)!];
    // Each batch sleeps 300 ms; they overlap when each started before the other ended.
    expect(a.startedAt).toBeLessThan(b.endedAt);
    expect(b.startedAt).toBeLessThan(a.endedAt);
    expect(answers.every((x) => x.batchSize === 2)).toBe(true);
  } finally {
    await host.stop();
  }
});

test('batchTimeoutMs rejects a hung batch and replaces its worker', async () => {
  const executor = new WorkerExecutor<readonly Op[], Array<Answer | Error>>({ module: MODULE, batchTimeoutMs: 400 });
  const host = new ModelHost<Op, Answer>(executor, { maxBatchSize: 4 });
  try {
    const first = await host.inference(echo(1));
    const started = Date.now();
    const hung = await host.inference({ op: 'hang', value: 0 }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000); // the spin would last 20 s
    expect(hung).toBeInstanceOf(DeadlineExceededError);
    expect(hung).toMatchObject({ reason: 'batch-timeout' });
    expect((hung as Error).message).toMatch(/batchTimeoutMs \(400 ms\).*replaced/);
    const next = await host.inference(echo(2));
    expect(next.value).toBe(4);
    expect(next.threadId).not.toBe(first.threadId);
  } finally {
    await host.stop();
  }
});

test('a worker that runs out of memory under resourceLimits rejects only its batch; a replacement serves the next', async () => {
  // The limit leaves room for ts-node, which loads the compiler in each worker under jest.
  const executor = new WorkerExecutor<readonly Op[], Array<Answer | Error>>({ module: MODULE, resourceLimits: { maxOldGenerationSizeMb: 256 } });
  const host = new ModelHost<Op, Answer>(executor, { maxBatchSize: 4 });
  try {
    const first = await host.inference(echo(1));
    const e = (await host.inference({ op: 'oom', value: 0 }).catch((x: unknown) => x)) as WorkerCrashedError;
    expect(e).toBeInstanceOf(WorkerCrashedError);
    expect(e.workerIndex).toBe(0);
    expect(e.message).toMatch(/worker 0 exited with code \d+ after an uncaught Error: .*memory limit.* while running this request's batch; the batch was rejected and the worker is being replaced/);
    expect((e.cause as { code?: string }).code).toBe('ERR_WORKER_OUT_OF_MEMORY');
    const next = await host.inference(echo(2));
    expect(next.value).toBe(4);
    expect(next.threadId).not.toBe(first.threadId);
    expect(executor.stats.replaced).toBe(1);
  } finally {
    await host.stop();
  }
});

describe('start failures reject start() with what was wrong', () => {
  test('a module path that does not exist', async () => {
    const host = new ModelHost(new WorkerExecutor({ module: join(__dirname, 'no-such-model.worker.js') }), { maxBatchSize: 2 });
    await expect(host.start()).rejects.toThrow(WorkerStartError);
    await expect(host.start()).rejects.toThrow(/cannot find the worker module .*no-such-model\.worker\.js/);
    await expect(host.inference(1)).rejects.toThrow(/cannot find the worker module/);
    await host.stop();
  });

  test('an export that does not exist', async () => {
    const error = (await createHost(MODULE, { export: 'nope', maxBatchSize: 2 }).catch((e: unknown) => e)) as WorkerStartError;
    expect(error).toBeInstanceOf(WorkerStartError);
    expect(error.message).toMatch(/worker 0 failed to start: .*behaviours\.worker\.ts has no export named "nope"; its exports are: default, failing, notAFactory, withHooks/);
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  test('a factory that throws, and an export that is not a factory', async () => {
    const [failing, notAFactory] = (await Promise.all([
      createHost(MODULE, { export: 'failing', maxBatchSize: 2 }).catch((e: unknown) => e),
      createHost(MODULE, { export: 'notAFactory', maxBatchSize: 2 }).catch((e: unknown) => e),
    ])) as [Error, Error];
    expect(failing).toBeInstanceOf(WorkerStartError);
    expect(failing.message).toMatch(/failed to start: the model file is corrupt/);
    expect((failing.cause as Error).stack).toContain('behaviours.worker.ts');
    expect(notAFactory.message).toMatch(/"notAFactory" .* is 42 \(number\); expected a factory/);
  });
});

test('the object form: start() runs in the worker before the first batch; stop() waits for the batch in flight', async () => {
  const executor = new WorkerExecutor<readonly Op[], Array<{ value: number; started: boolean }>>({ module: MODULE, export: 'withHooks' });
  const running = executor.run([echo(1), echo(2)]);
  const stopping = executor.stop();
  await expect(running).resolves.toEqual([
    { value: 1, started: true },
    { value: 2, started: true },
  ]);
  await stopping;
  await expect(executor.run([echo(3)])).rejects.toThrow(HostStoppedError);
});

test('more onnxruntime threads than cores (workers × intraOpNumThreads) draws one warning naming the product', () => {
  const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    const cores = availableParallelism();
    new WorkerExecutor({ module: MODULE, workers: 2, intraOpNumThreads: cores, name: 'greedy' });
    new WorkerExecutor({ module: MODULE, workers: 2, intraOpNumThreads: cores });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toBe(`greedy: 2 workers × intraOpNumThreads ${cores} = ${2 * cores} threads on ${cores} cores; threads beyond the cores contend and slow every batch`);
  } finally {
    warn.mockRestore();
  }
});

test('options are checked when the executor is built', () => {
  expect(() => new WorkerExecutor({ module: '' })).toThrow(/expected `module` to be a module path or id/);
  expect(() => new WorkerExecutor({ module: MODULE, workers: 0 })).toThrow(RangeError);
  expect(() => new WorkerExecutor({ module: MODULE, wrokers: 2 } as never)).toThrow(/unknown option `wrokers`/);
});
