import { runInNewContext } from 'node:vm';
import { ModelHost } from '../../src/engine/model-host';
import { BatchSizeMismatchError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import { ControlledModel, settle } from '../support/controlled-model';

describe('output checks on every batch', () => {
  test('an Error in the output rejects only its caller', async () => {
    const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => (x === 2 ? new RangeError(`no ${x}`) : x * 2)), { maxBatchSize: 8 });
    const [a, b, c] = await Promise.allSettled([1, 2, 3].map((x) => host.inference(x)));
    expect(a).toEqual({ status: 'fulfilled', value: 2 });
    expect(b).toEqual({ status: 'rejected', reason: new RangeError('no 2') });
    expect(c).toEqual({ status: 'fulfilled', value: 6 });
    expect(host.stats.rejected.error).toBe(1);
  });

  test('an Error made in another realm (a vm context) also rejects only its caller', async () => {
    const foreign = runInNewContext("new TypeError('from a vm context')") as Error;
    expect(foreign instanceof Error).toBe(false);
    const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => (x === 2 ? foreign : x)), { maxBatchSize: 8 });
    const [a, b] = await Promise.allSettled([1, 2].map((x) => host.inference(x)));
    expect(a).toEqual({ status: 'fulfilled', value: 1 });
    expect(b).toEqual({ status: 'rejected', reason: foreign });
    expect(host.stats.rejected.error).toBe(1);
  });

  test('a result count that differs from the item count rejects the whole batch with both numbers', async () => {
    const host = new ModelHost(async (xs: readonly number[]) => xs.slice(1), { maxBatchSize: 8, name: 'lengthy' });
    const results = await Promise.allSettled([1, 2, 3, 4].map((x) => host.inference(x)));
    for (const r of results) {
      expect(r.status).toBe('rejected');
      const e = (r as PromiseRejectedResult).reason as BatchSizeMismatchError;
      expect(e).toBeInstanceOf(BatchSizeMismatchError);
      expect(e.message).toBe(
        'lengthy: the batch function must return one result (or Error) per item, in item order; expected 4 results for 4 items, got 3',
      );
      expect([e.expected, e.actual]).toEqual([4, 3]);
    }
    await expect(host.inference(9)).rejects.toBeInstanceOf(BatchSizeMismatchError); // and keeps serving
  });

  test('a non-array output is a TypeError stating the contract', async () => {
    const host = new ModelHost((async () => 'nope') as unknown as (xs: readonly number[]) => Promise<number[]>, { maxBatchSize: 2 });
    await expect(host.inference(1)).rejects.toThrow(
      new TypeError('The batch function must return (a promise of) an array with one result or Error per item, in item order; for 1 items it returned "nope" (string)'),
    );
  });

  test('a thrown error rejects every request of the batch, and the host keeps serving', async () => {
    let fail = true;
    const host = new ModelHost(
      async (xs: readonly number[]) => {
        if (fail) throw new Error('model exploded');
        return xs;
      },
      { maxBatchSize: 8 },
    );
    const results = await Promise.allSettled([1, 2, 3].map((x) => host.inference(x)));
    expect(results.map((r) => (r as PromiseRejectedResult).reason?.message)).toEqual(['model exploded', 'model exploded', 'model exploded']);
    fail = false;
    await expect(host.inference(5)).resolves.toBe(5);
  });

  test('a synchronous throw and a non-Error throw are both delivered as Errors', async () => {
    const sync = new ModelHost((): number[] => {
      throw new TypeError('sync');
    }, 4);
    await expect(sync.inference(1)).rejects.toThrow(new TypeError('sync'));
    const weird = new ModelHost(async (): Promise<number[]> => {
      throw 'a string';
    }, 4);
    const e = (await weird.inference(1).catch((x: Error) => x)) as Error;
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toBe('The batch function threw a non-Error value: "a string" (string)');
    expect(e.cause).toBe('a string');
  });

  test('isolateErrors bisects a failing batch and rejects only the items that fail alone', async () => {
    const calls: number[][] = [];
    const host = new ModelHost(
      async (xs: readonly number[]) => {
        calls.push([...xs]);
        const bad = xs.find((x) => x % 5 === 0);
        if (bad !== undefined) throw new Error(`poisoned by ${bad}`);
        return xs.map((x) => x * 10);
      },
      { maxBatchSize: 8, isolateErrors: true },
    );
    const results = await Promise.allSettled([1, 2, 3, 4, 5, 6, 7, 8].map((x) => host.inference(x)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      10, 20, 30, 40, 'poisoned by 5', 60, 70, 80,
    ]);
    expect(calls).toEqual([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8], [5, 6], [5], [6], [7, 8]]);
  });

  test('without isolateErrors the same batch fails as a whole in one call', async () => {
    let calls = 0;
    const host = new ModelHost(
      async (xs: readonly number[]) => {
        calls++;
        if (xs.includes(5)) throw new Error('poisoned');
        return xs;
      },
      { maxBatchSize: 8 },
    );
    const results = await Promise.allSettled([4, 5, 6].map((x) => host.inference(x)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(calls).toBe(1);
  });
});

describe('deadlines and cancellation', () => {
  function setup(timeoutMs?: number) {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const host = new ModelHost(model.fn, { maxBatchSize: 4, clock, ...(timeoutMs ? { timeoutMs } : {}) });
    return { clock, model, host };
  }

  test('a request that times out in the queue leaves it at once and never runs', async () => {
    const { clock, model, host } = setup();
    host.inference(0);
    await settle();
    const late = host.inference(1, { timeoutMs: 10 });
    const kept = host.inference(2);
    await settle();
    clock.advance(10);
    await expect(late).rejects.toMatchObject({
      name: 'DeadlineExceededError',
      reason: 'timeout',
      phase: 'queued',
      elapsedMs: 10,
      message: 'microbatch: timed out after 10 ms in the queue (timeoutMs 10); it never ran',
    });
    expect(host.stats.queued).toBe(1);
    model.answer(0, (x) => x);
    await settle();
    expect(model.last.items).toEqual([2]);
    model.answer(1, (x) => x + 1);
    await expect(kept).resolves.toBe(3);
    expect(host.stats.rejected.deadline).toBe(1);
  });

  test('the host timeoutMs is the default and a per-request timeoutMs overrides it', async () => {
    const { clock, host } = setup(5);
    const running = host.inference(0);
    await settle();
    const byDefault = host.inference(1);
    const longer = host.inference(2, { timeoutMs: 50 });
    clock.advance(5);
    await expect(running).rejects.toMatchObject({ reason: 'timeout', phase: 'running' });
    await expect(byDefault).rejects.toMatchObject({ reason: 'timeout', phase: 'queued' });
    clock.advance(40);
    await settle();
    expect(host.stats.queued).toBe(1);
    clock.advance(5);
    await expect(longer).rejects.toMatchObject({ reason: 'timeout' });
  });

  test('a request that times out while running is rejected at once; its result is dropped, its batch-mates are answered', async () => {
    const { clock, model, host } = setup();
    const a = host.inference(1, { timeoutMs: 10 });
    const b = host.inference(2);
    await settle();
    clock.advance(10);
    await expect(a).rejects.toMatchObject({
      name: 'DeadlineExceededError',
      phase: 'running',
      message: 'microbatch: timed out after 10 ms (timeoutMs 10) while its batch was running; its result will be discarded',
    });
    model.answer(0, (x) => x * 3);
    await expect(b).resolves.toBe(6);
  });

  test('time-outs and sheds carry no stack frames (they are made on the host loop, never the caller stack), and the global stack limit is restored', async () => {
    const limit = Error.stackTraceLimit;
    const { clock, host } = setup();
    const running = host.inference(1, { timeoutMs: 10 });
    await settle();
    const queued = host.inference(2, { timeoutMs: 10 });
    clock.advance(10);
    const errors = await Promise.all([running, queued].map((p) => p.then(() => undefined, (e: Error) => e)));
    const shedding = new ModelHost(async (xs: readonly number[]) => xs, {
      maxBatchSize: 4,
      clock,
      policy: { name: 'refuser', decide: (view) => ({ release: false, shed: [...view.requests()] }) },
    });
    errors.push(await shedding.inference(3).then(() => undefined, (e: Error) => e));
    expect(errors.map((e) => e?.name)).toEqual(['DeadlineExceededError', 'DeadlineExceededError', 'DeadlineExceededError']);
    expect(errors.map((e) => (e as { reason?: string }).reason)).toEqual(['timeout', 'timeout', 'shed']);
    for (const e of errors) expect(e?.stack).toBe(`DeadlineExceededError: ${String(e?.message)}`);
    expect(Error.stackTraceLimit).toBe(limit);
    // An abort keeps its frames: it is made on the stack of `abort()`, which may be the caller's.
    const ac = new AbortController();
    const aborted = host.inference(4, { signal: ac.signal }).then(() => undefined, (e: Error) => e);
    ac.abort();
    expect((await aborted)?.stack).toMatch(/\n\s+at /);
  });

  test('aborting a queued request removes it; its cause is the signal reason', async () => {
    const { model, host } = setup();
    host.inference(0);
    await settle();
    const ac = new AbortController();
    const p = host.inference(1, { signal: ac.signal });
    host.inference(2);
    ac.abort(new Error('client went away'));
    const e = (await p.catch((x: Error) => x)) as Error;
    expect(e.name).toBe('AbortError');
    expect(e.message).toBe('microbatch: the request was aborted while queued; it never ran');
    expect(e.cause).toEqual(new Error('client went away'));
    model.answer(0, (x) => x);
    await settle();
    expect(model.last.items).toEqual([2]);
    expect(host.stats.rejected.aborted).toBe(1);
  });

  test('aborting a running request settles it at once and drops its result', async () => {
    const { model, host } = setup();
    const ac = new AbortController();
    const p = host.inference(1, { signal: ac.signal });
    const q = host.inference(2);
    await settle();
    ac.abort();
    await expect(p).rejects.toMatchObject({ name: 'AbortError', message: 'microbatch: the request was aborted while its batch was running; its result will be discarded' });
    model.answer(0, (x) => x);
    await expect(q).resolves.toBe(2);
  });

  test('an already-aborted signal rejects without queueing', async () => {
    const { host } = setup();
    const signal = AbortSignal.abort('too late');
    await expect(host.inference(1, { signal })).rejects.toMatchObject({
      name: 'AbortError',
      cause: 'too late',
      message: 'microbatch: the request was aborted before it was queued',
    });
    expect(host.stats.queued).toBe(0);
  });

  test('settling removes the abort listener, so a long-lived signal does not accumulate them', async () => {
    const host = new ModelHost(async (xs: readonly number[]) => xs, 8);
    const ac = new AbortController();
    let added = 0;
    let removed = 0;
    const add = ac.signal.addEventListener.bind(ac.signal);
    const remove = ac.signal.removeEventListener.bind(ac.signal);
    ac.signal.addEventListener = ((...args: Parameters<typeof add>) => (added++, add(...args))) as typeof add;
    ac.signal.removeEventListener = ((...args: Parameters<typeof remove>) => (removed++, remove(...args))) as typeof remove;
    for (let i = 0; i < 20; i++) await host.inference(i, { signal: ac.signal });
    expect([added, removed]).toEqual([20, 20]);
  });

  test('maxQueueSize rejects at once with QueueFullError and queues nothing', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const host = new ModelHost(model.fn, { maxBatchSize: 2, maxQueueSize: 3, clock, name: 'small' });
    host.inference(0);
    await settle();
    const queued = [1, 2, 3].map((x) => host.inference(x));
    const refused = host.inference(4);
    await expect(refused).rejects.toMatchObject({
      name: 'QueueFullError',
      maxQueueSize: 3,
      message: 'small: the queue is full (maxQueueSize is 3 waiting requests); the request was refused without being queued. Retry later or raise maxQueueSize.',
    });
    expect(host.stats.queued).toBe(3);
    expect(host.stats.rejected.queueFull).toBe(1);
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => x);
    await settle();
    model.answer(2, (x) => x);
    await expect(Promise.all(queued)).resolves.toEqual([1, 2, 3]);
  });

  test('batchTimeoutMs rejects a hung batch, frees the slot, and ignores the late result', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const host = new ModelHost(model.fn, { maxBatchSize: 2, batchTimeoutMs: 100, clock });
    const hung = [host.inference(1), host.inference(2)];
    await settle();
    const next = host.inference(3);
    clock.advance(100);
    for (const p of hung) {
      await expect(p).rejects.toMatchObject({
        name: 'DeadlineExceededError',
        reason: 'batch-timeout',
        message: 'microbatch: the batch this request was in ran longer than batchTimeoutMs (100 ms); its result will be discarded',
      });
    }
    await settle();
    expect(model.sizes).toEqual([2, 1]);
    model.answer(1, (x) => x * 2);
    await expect(next).resolves.toBe(6);
    model.answer(0, (x) => x); // the late result of the hung batch changes nothing
    await settle();
    expect(host.stats).toMatchObject({ running: 0, runningBatches: 0, rejected: expect.objectContaining({ deadline: 2 }) });
  });
});
