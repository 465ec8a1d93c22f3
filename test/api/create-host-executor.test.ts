import 'reflect-metadata';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { batching } from '../../src/api/batching';
import { createHost } from '../../src/api/create-host';
import { HostStoppedError } from '../../src/core/errors';
import type { Executor } from '../../src/executors/executor';
import { WorkerExecutor } from '../../src/executors/worker';
import type { Answer, Op } from '../fixtures/workers/behaviours.worker';
import { waitFor } from '../support/wait-for';

// createHost(C, { executor: <an executor object> }): the class gives the @batching options, the
// method and the types; the user's pool runs every merged batch and holds the model.

let constructed = 0;

/** Stands for a model whose weights live in the pool: constructing it here would be a bug. */
class Remote {
  constructor() {
    constructed++;
  }
  @batching({ maxBatchSize: 4, name: 'remote' })
  async predictBatch(xs: readonly number[]): Promise<Array<number | Error>> {
    throw new Error(`the pool runs this batch, not this thread (${xs.length} items)`);
  }
}

/** An executor that records what reaches it, in the order it happens. */
class Recording implements Executor<readonly number[], number[]> {
  readonly log: string[] = [];
  readonly batches: number[][] = [];
  readonly concurrency?: number;
  running = 0;
  peak = 0;
  constructor(concurrency?: number) {
    if (concurrency !== undefined) this.concurrency = concurrency;
    this.reached = new Promise((r) => (this.#reached = r));
  }
  /** Resolves when a batch reaches run(); a held executor keeps every batch there until release(). */
  readonly reached: Promise<void>;
  #reached!: () => void;
  #gate: Promise<void> | undefined;
  #open!: () => void;
  /** Holds every batch in run() until release() (before the host's timers can matter). */
  hold(): void {
    this.#gate = new Promise((r) => (this.#open = r));
  }
  release(): void {
    this.#open();
  }
  async start(): Promise<void> {
    this.log.push('start');
    await new Promise((r) => setImmediate(r)); // start() really is asynchronous
    this.log.push('started');
  }
  async run(batch: readonly number[]): Promise<number[]> {
    this.batches.push([...batch]);
    this.peak = Math.max(this.peak, ++this.running);
    this.log.push(`run ${batch.join(',')}`);
    this.#reached();
    if (this.#gate !== undefined) await this.#gate;
    this.running--;
    this.log.push(`ran ${batch.join(',')}`);
    return batch.map((x) => x * 10);
  }
  async stop(): Promise<void> {
    this.log.push('stop');
  }
}

beforeEach(() => {
  constructed = 0;
});

describe('createHost with an executor object', () => {
  test('the executor receives the merged batches and each caller gets its own result; the class is not constructed', async () => {
    const pool = new Recording();
    const host = await createHost(Remote, { executor: pool });
    expect(host.name).toBe('remote');
    expect(host.options.maxConcurrentBatches).toBe(1);
    await expect(Promise.all([1, 2, 3, 4, 5, 6].map((x) => host.inference(x)))).resolves.toEqual([10, 20, 30, 40, 50, 60]);
    // Six concurrent calls, maxBatchSize 4 from the decorator, one batch at a time.
    expect(pool.batches).toEqual([
      [1, 2, 3, 4],
      [5, 6],
    ]);
    expect(host.stats).toMatchObject({ batches: 2, requests: 6 });
    await host.stop();
    expect(constructed).toBe(0);
  });

  test('a piscina-style pool (run on the prototype, extra arguments, no start/stop) works as it is', async () => {
    class ThreadPool {
      readonly calls: unknown[][] = [];
      async run(task: unknown, options?: { name?: string }): Promise<number[]> {
        this.calls.push([task, options]);
        return (task as number[]).map((x) => -x);
      }
    }
    const pool = new ThreadPool();
    const host = await createHost(Remote, { executor: pool, maxBatchSize: 2 });
    await expect(Promise.all([1, 2, 3].map((x) => host.inference(x)))).resolves.toEqual([-1, -2, -3]);
    expect(pool.calls).toEqual([[[1, 2], undefined], [[3], undefined]]);
    await host.stop();
  });

  test('start() is awaited before createHost resolves; stop() runs once, after the batch in flight has finished', async () => {
    const pool = new Recording();
    pool.hold();
    const host = await createHost(Remote, { executor: pool });
    expect(pool.log).toEqual(['start', 'started']);
    const answers = Promise.all([1, 2].map((x) => host.inference(x)));
    await pool.reached; // the batch is in the executor, and stays there until released
    const stopped = Promise.all([host.stop(), host.stop()]);
    await new Promise((r) => setImmediate(r));
    expect(pool.log).toEqual(['start', 'started', 'run 1,2']); // stop() waits for the batch in flight
    pool.release();
    await stopped;
    await expect(answers).resolves.toEqual([10, 20]);
    expect(pool.log).toEqual(['start', 'started', 'run 1,2', 'ran 1,2', 'stop']);
  });

  test('stopExecutor: false leaves a shared executor running for the other hosts, which the owner stops', async () => {
    const pool = new Recording();
    const a = await createHost(Remote, { executor: pool, stopExecutor: false });
    const b = await createHost(Remote, { executor: pool, stopExecutor: false, name: 'other' });
    await a.stop();
    await expect(b.inference(7)).resolves.toBe(70);
    await b.stop();
    expect(pool.log).toEqual(['start', 'started', 'start', 'started', 'run 7', 'ran 7']);
    await pool.stop();
  });

  test("the executor's errors reject the batch's callers with that very error; the host keeps serving", async () => {
    const boom = Object.assign(new RangeError('GPU out of memory'), { code: 'E_OOM' });
    let calls = 0;
    const host = await createHost(Remote, {
      executor: {
        run: async (batch) => {
          if (calls++ === 0) throw boom;
          return batch.map((x) => (x === 13 ? new Error('unlucky') : x + 1));
        },
      },
    });
    const first = await Promise.allSettled([1, 2, 3].map((x) => host.inference(x)));
    expect(first.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    first.forEach((r) => expect((r as PromiseRejectedResult).reason).toBe(boom));
    const second = await Promise.allSettled([12, 13].map((x) => host.inference(x)));
    expect(second[0]).toEqual({ status: 'fulfilled', value: 13 });
    expect((second[1] as PromiseRejectedResult).reason).toEqual(new Error('unlucky'));
    await host.stop();
  });

  test('a start() that fails rejects createHost with its error, and the host stops the executor it owns', async () => {
    const log: string[] = [];
    const failure = new Error('cannot reach the model server');
    const executor = {
      start: async () => {
        log.push('start');
        throw failure;
      },
      run: (batch: readonly number[]) => batch.map((x) => x),
      stop: async () => void log.push('stop'),
    };
    await expect(createHost(Remote, { executor })).rejects.toBe(failure);
    expect(log).toEqual(['start', 'stop']);
    log.length = 0;
    await expect(createHost(Remote, { executor, stopExecutor: false })).rejects.toBe(failure);
    expect(log).toEqual(['start']);
  });

  test('maxConcurrentBatches defaults to the executor’s concurrency; @batching and createHost values beat it', async () => {
    const pool = new Recording(3);
    pool.hold();
    const host = await createHost(Remote, { executor: pool, maxBatchSize: 1 });
    expect(host.options.maxConcurrentBatches).toBe(3);
    const answers = Promise.all([1, 2, 3, 4, 5, 6].map((x) => host.inference(x)));
    await pool.reached;
    await new Promise((r) => setImmediate(r));
    expect(pool.running).toBe(3); // three held batches, and the other three wait for a slot
    pool.release();
    await answers;
    expect(pool.peak).toBe(3);
    await host.stop();

    const capped = await createHost(Remote, { executor: new Recording(3), maxConcurrentBatches: 2 });
    expect(capped.options.maxConcurrentBatches).toBe(2);
    await capped.stop();

    class Pinned {
      @batching({ maxBatchSize: 4, maxConcurrentBatches: 5 })
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    const pinned = await createHost(Pinned, { executor: new Recording(3) });
    expect(pinned.options.maxConcurrentBatches).toBe(5);
    await pinned.stop();

    await expect(createHost(Remote, { executor: new Recording(0) })).rejects.toThrow(
      new RangeError('createHost(Remote): expected `executor.concurrency` to be an integer from 1 and up (how many batches the executor runs at once), got 0 (number)'),
    );
    await expect(createHost(Remote, { executor: { run: (b: readonly number[]) => [...b], concurrency: '2' as never } })).rejects.toThrow(
      new TypeError('createHost(Remote): expected `executor.concurrency` to be an integer from 1 and up (how many batches the executor runs at once), got "2" (string)'),
    );
  });
});

describe('createHost with an executor object: misuse', () => {
  test('context and container are refused before anything starts or any provider runs', async () => {
    let ran = false;
    const pool = new Recording();
    const context = { model: () => void (ran = true) };
    await expect(createHost(Remote, { executor: pool, context })).rejects.toThrow(
      new TypeError(
        'createHost(Remote): `context` cannot be used with an executor object: the executor runs every batch and holds the model, so nothing ' +
          'on this thread is built from it. Load the model where the executor runs (its worker module), or leave out `executor`',
      ),
    );
    const { container } = await import('tsyringe');
    await expect(createHost(Remote, { executor: pool, container: container.createChildContainer() })).rejects.toThrow(
      /^createHost\(Remote\): `container` cannot be used with an executor object/,
    );
    expect(ran).toBe(false);
    expect(pool.log).toEqual([]);
  });

  test('a value that is neither a placement, worker options nor an executor gets a TypeError saying what was expected and what came', async () => {
    const expected = "expected `executor` to be 'inline', 'worker', an object of worker options, or an executor object with a run(batch) method";
    const cases: Array<[unknown, string]> = [
      ['gpu', `createHost(Remote): ${expected}, got "gpu" (string)`],
      [4, `createHost(Remote): ${expected}, got 4 (number)`],
      [null, `createHost(Remote): ${expected}, got null`],
      [[{ run: () => [] }], `createHost(Remote): ${expected}, got an array of length 1`],
      [function run() {}, `createHost(Remote): ${expected} (to run batches with a function, pass { run: fn }), got a function named run`],
      [{ run: 'fast' }, 'createHost(Remote): expected `executor.run` to be a function (an executor object runs each batch with run(batch)), got "fast" (string)'],
      [{ run: () => [], stop: true }, 'createHost(Remote): expected `executor.stop` to be a function or absent, got true (boolean)'],
      [{ start: async () => undefined, stop: async () => undefined }, `createHost(Remote): ${expected}; this object has start/stop but no run, got an object`],
    ];
    for (const [executor, message] of cases) {
      const e = (await createHost(Remote, { executor: executor as never }).catch((x: unknown) => x)) as Error;
      expect(e.constructor).toBe(TypeError);
      expect(e.message).toBe(message);
    }
  });

  test('stopExecutor is checked: a boolean, and only next to an executor object', async () => {
    await expect(createHost(Remote, { executor: new Recording(), stopExecutor: 'no' as never })).rejects.toThrow(
      new TypeError('createHost(Remote): expected `stopExecutor` to be a boolean, got "no" (string)'),
    );
    await expect(createHost(Remote, { stopExecutor: false })).rejects.toThrow(
      new TypeError('createHost(Remote): `stopExecutor` applies only to an executor object passed as `executor` (the host always stops the executors it creates)'),
    );
    await expect(createHost(Remote, { executor: 'worker', stopExecutor: true })).rejects.toThrow(/`stopExecutor` applies only to an executor object/);
  });
});

describe('createHost with a WorkerExecutor as the pool', () => {
  /** The batch method's types describe the worker module's batch function; its body runs nowhere. */
  class Behaviours {
    @batching({ maxBatchSize: 8 })
    async predictBatch(batch: readonly Op[]): Promise<Array<Answer | Error>> {
      throw new Error(`runs in the worker module (${batch.length} items)`);
    }
  }
  const MODULE = join(__dirname, '../fixtures/workers/behaviours.worker.ts');
  /** OS threads of this process (Linux): each worker thread is one. */
  const osThreads = (): number | undefined => {
    try {
      return readdirSync('/proc/self/task').length;
    } catch {
      return undefined;
    }
  };
  const echo = (value: number): Op => ({ op: 'echo', value });

  test('a pool shared by two hosts serves both, outlives them with stopExecutor: false, and its own stop() leaves no worker', async () => {
    const before = osThreads();
    const pool = new WorkerExecutor<readonly Op[], Array<Answer | Error>>({ module: MODULE, workers: 2, name: 'shared' });
    const a = await createHost(Behaviours, { executor: pool, stopExecutor: false, name: 'a' });
    const b = await createHost(Behaviours, { executor: pool, stopExecutor: false, name: 'b' });
    try {
      expect(a.options.maxConcurrentBatches).toBe(2);
      if (before !== undefined) expect(osThreads()).toBeGreaterThanOrEqual(before + 2);
      const [fromA, fromB] = await Promise.all([
        Promise.all([1, 2, 3].map((v) => a.inference(echo(v)))),
        Promise.all([4, 5].map((v) => b.inference(echo(v)))),
      ]);
      expect(fromA.map((r) => r.value)).toEqual([2, 4, 6]);
      expect(fromB.map((r) => r.value)).toEqual([8, 10]);
      expect(fromA.every((r) => r.batchSize === 3 && r.threadId !== threadId)).toBe(true);
      expect(fromB.every((r) => r.batchSize === 2 && r.threadId !== threadId)).toBe(true);
      await a.stop();
      await b.stop();
      await expect(pool.run([echo(21)])).resolves.toMatchObject([{ value: 42 }]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await pool.stop();
    }
    await expect(pool.run([echo(1)])).rejects.toBeInstanceOf(HostStoppedError);
    // A worker's OS thread may outlive its 'exit' event by a moment on a loaded machine.
    if (before !== undefined) await waitFor(() => (osThreads() as number) <= before, 5_000, `the OS threads back to ${before}`);
  }, 30_000);

  test('by default host.stop() drains, then stops the pool it was given', async () => {
    const before = osThreads();
    const pool = new WorkerExecutor<readonly Op[], Array<Answer | Error>>({ module: MODULE, name: 'owned' });
    const host = await createHost(Behaviours, { executor: pool });
    if (before !== undefined) expect(osThreads()).toBeGreaterThanOrEqual(before + 1);
    const pending = Promise.all([1, 2].map((v) => host.inference({ op: 'sleep', value: 30 + v })));
    await host.stop();
    await expect(pending).resolves.toMatchObject([{ value: 31 }, { value: 32 }]);
    expect(pool.stats.busy).toBe(0);
    await expect(pool.run([echo(1)])).rejects.toThrow(new HostStoppedError('owned: the executor is stopped (or stopping) and runs no new batches'));
    if (before !== undefined) await waitFor(() => (osThreads() as number) <= before, 5_000, `the OS threads back to ${before}`);
  }, 30_000);
});
