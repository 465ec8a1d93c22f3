import { ModelHost } from '../../src/engine/model-host';
import { ListBatcher } from '../../src/batchers/list-batcher';
import { ManualClock } from '../../src/core/manual-clock';
import type { BatchEvent } from '../../src/core/observer';
import { ControlledModel, settle } from '../support/controlled-model';

function setup(options: { maxBatchSize: number; maxDelayMs?: number; maxConcurrentBatches?: number }) {
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const events: BatchEvent[] = [];
  const host = new ModelHost(model.fn, { ...options, clock, observer: { onBatch: (e) => events.push(e) } });
  return { clock, model, host, events };
}

describe('work-conserving release (greedy, maxDelayMs 0)', () => {
  test('a lone request at idle runs at once, with no timer set', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 8 });
    const p = host.inference(21);
    await settle();
    expect(model.sizes).toEqual([1]);
    expect(clock.pendingTimers).toBe(0);
    expect(clock.now()).toBe(0);
    model.answer(0, (x) => x * 2);
    await expect(p).resolves.toBe(42);
    await settle();
    expect(events[0]).toMatchObject({ rows: 1, requests: 1, reason: 'idle', queueWaitOldestMs: 0 });
  });

  test('a synchronous burst forms one batch', async () => {
    const { model, host } = setup({ maxBatchSize: 8 });
    const ps = [1, 2, 3, 4, 5].map((x) => host.inference(x));
    await settle();
    expect(model.sizes).toEqual([5]);
    model.answer(0, (x) => -x);
    await expect(Promise.all(ps)).resolves.toEqual([-1, -2, -3, -4, -5]);
  });

  test('while the model is busy, 100 requests form batches of maxBatchSize, then the remainder (maxDelayMs 0 still fills them)', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 16, maxDelayMs: 0 });
    const first = host.inference(-1);
    await settle();
    expect(model.sizes).toEqual([1]);
    const ps = Array.from({ length: 100 }, (_, i) => host.inference(i));
    await settle();
    expect(model.sizes).toEqual([1]); // nothing starts while the only slot is busy
    expect(host.stats.queued).toBe(100);
    for (let call = 0; call < 8; call++) {
      model.answer(call, (x) => x + 1000);
      await settle();
    }
    expect(model.sizes).toEqual([1, 16, 16, 16, 16, 16, 16, 4]);
    expect([clock.now(), clock.pendingTimers]).toEqual([0, 0]); // no timer was involved
    expect(model.calls.flatMap((c) => c.items).slice(1)).toEqual(Array.from({ length: 100 }, (_, i) => i)); // FIFO
    await expect(first).resolves.toBe(999);
    await expect(Promise.all(ps)).resolves.toEqual(Array.from({ length: 100 }, (_, i) => i + 1000));
    expect(events.map((e) => e.reason)).toEqual(['idle', 'full', 'full', 'full', 'full', 'full', 'full', 'idle']);
    expect(host.stats).toEqual({
      queued: 0,
      running: 0,
      runningBatches: 0,
      batches: 8,
      requests: 101,
      rows: 101,
      meanBatchSize: 101 / 8,
      rejected: { queueFull: 0, deadline: 0, aborted: 0, stopped: 0, error: 0 },
    });
  });

  test('a batch keeps absorbing arrivals until it starts', async () => {
    const { model, host } = setup({ maxBatchSize: 8 });
    host.inference(0);
    await settle();
    host.inference(1);
    await settle();
    host.inference(2); // arrives later, still before the slot frees
    await settle();
    model.answer(0, (x) => x);
    await settle();
    expect(model.calls[1]?.items).toEqual([1, 2]);
  });

  test('maxConcurrentBatches: 2 keeps two batches in flight and no more', async () => {
    const { model, host } = setup({ maxBatchSize: 4, maxConcurrentBatches: 2 });
    host.inference(0);
    await settle();
    host.inference(1);
    await settle();
    expect(model.sizes).toEqual([1, 1]);
    expect(host.stats.runningBatches).toBe(2);
    for (let i = 2; i < 12; i++) host.inference(i);
    await settle();
    expect(model.sizes).toEqual([1, 1]);
    model.answer(1, (x) => x);
    await settle();
    expect(model.sizes).toEqual([1, 1, 4]);
    model.answer(0, (x) => x);
    await settle();
    expect(model.sizes).toEqual([1, 1, 4, 4]);
    expect(host.stats.runningBatches).toBe(2);
  });
});

describe('maxDelayMs window', () => {
  test('at idle waits at most maxDelayMs from the oldest request; later arrivals do not restart it', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 8, maxDelayMs: 5 });
    const a = host.inference(1);
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(3);
    const b = host.inference(2);
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(1.9);
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(0.1); // t = 5: the window of the oldest closes
    await settle();
    expect(model.sizes).toEqual([2]);
    model.answer(0, (x) => x * 10);
    await expect(Promise.all([a, b])).resolves.toEqual([10, 20]);
    await settle();
    expect(events[0]).toMatchObject({ reason: 'timer', queueWaitOldestMs: 5, queueWaitMeanMs: 3.5 });
  });

  test('releases early when the batch is full', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 4, maxDelayMs: 5 });
    for (let i = 0; i < 3; i++) host.inference(i);
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(1);
    host.inference(3);
    await settle();
    expect(model.sizes).toEqual([4]);
    expect(clock.now()).toBe(1);
    expect(clock.pendingTimers).toBe(0); // the window timer was cleared
    model.answer(0, (x) => x);
    await settle();
    expect(events[0]?.reason).toBe('full');
  });

  test('a backlog still drains in full batches without waiting for the window', async () => {
    const { clock, model, host } = setup({ maxBatchSize: 4, maxDelayMs: 50 });
    for (let i = 0; i < 4; i++) host.inference(i);
    await settle();
    for (let i = 4; i < 13; i++) host.inference(i);
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => x);
    await settle();
    expect(model.sizes).toEqual([4, 4, 4]);
    expect(clock.now()).toBe(0);
    model.answer(2, (x) => x);
    await settle();
    expect(model.sizes).toEqual([4, 4, 4]); // the last one waits for its window
    clock.advance(50);
    await settle();
    expect(model.sizes).toEqual([4, 4, 4, 1]);
  });

  test('releases early when a waiting request would time out inside the window', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 8, maxDelayMs: 10 });
    host.inference(1);
    await settle();
    clock.advance(2);
    host.inference(2, { timeoutMs: 5 }); // deadline 7 < window end 10
    await settle();
    expect(model.sizes).toEqual([2]);
    model.answer(0, (x) => x);
    await settle();
    expect(events[0]?.reason).toBe('deadline');
  });

  test('the window applies to a free slot even while another batch runs', async () => {
    const { clock, model, host } = setup({ maxBatchSize: 8, maxDelayMs: 4, maxConcurrentBatches: 2 });
    host.inference(0);
    await settle();
    clock.advance(4);
    await settle();
    expect(model.sizes).toEqual([1]);
    host.inference(1);
    await settle();
    expect(model.sizes).toEqual([1]);
    clock.advance(4);
    await settle();
    expect(model.sizes).toEqual([1, 1]);
  });
});

describe('priorities and rows', () => {
  test('higher priority runs first, FIFO within a level', async () => {
    const { model, host } = setup({ maxBatchSize: 3 });
    host.inference(0);
    await settle();
    const order = [
      [1, 0],
      [2, 5],
      [3, 0],
      [4, 5],
      [5, 9],
      [6, -1],
    ] as const;
    for (const [x, priority] of order) host.inference(x, { priority });
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => x);
    await settle();
    expect(model.calls.slice(1).map((c) => c.items)).toEqual([
      [5, 2, 4],
      [1, 3, 6],
    ]);
  });

  test('maxBatchSize counts rows, and a request never gets overtaken by smaller ones', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number[], number>();
    const host = new ModelHost(model.fn, { maxBatchSize: 5, clock, batcher: new ListBatcher<number[], number>({ rows: (xs) => xs.length }) });
    host.inference([0]);
    await settle();
    for (const item of [[1, 1, 1], [2, 2, 2], [3], [4]]) host.inference(item);
    model.answer(0, (xs) => xs.length);
    await settle();
    expect(model.last.items).toEqual([[1, 1, 1]]); // [2,2,2] does not fit; [3] and [4] wait behind it
    model.answer(1, (xs) => xs.length);
    await settle();
    expect(model.last.items).toEqual([[2, 2, 2], [3], [4]]);
    expect(host.stats.rows).toBe(1 + 3 + 5);
  });
});

describe('observer', () => {
  test('reports rows, requests, reason and timings for each batch, and outcomes per request', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const batches: BatchEvent[] = [];
    const outcomes: string[] = [];
    const host = new ModelHost(model.fn, {
      maxBatchSize: 4,
      clock,
      observer: { onBatch: (e) => batches.push(e), onRequest: (e) => outcomes.push(`${e.outcome}:${e.queueMs}+${e.runMs}`) },
    });
    const a = host.inference(1);
    const b = host.inference(2);
    await settle();
    clock.advance(7);
    model.last.resolve([10, new Error('bad item')]);
    await expect(a).resolves.toBe(10);
    await expect(b).rejects.toThrow('bad item');
    await settle();
    expect(batches).toEqual([
      expect.objectContaining({ host: 'microbatch', rows: 2, requests: 2, reason: 'idle', runMs: 7, modelCalls: 1, succeeded: 1, failed: 1, paddingWaste: 0 }),
    ]);
    expect(outcomes).toEqual(['ok:0+7', 'error:0+7']);
  });

  test('an observer that throws does not disturb the host', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const host = new ModelHost(async (xs: readonly number[]) => xs, {
      maxBatchSize: 4,
      observer: {
        onBatch: () => {
          throw new Error('observer bug');
        },
      },
    });
    await expect(Promise.all([host.inference(1), host.inference(2)])).resolves.toEqual([1, 2]);
    await expect(host.inference(3)).resolves.toBe(3);
    warn.mockRestore();
  });
});

describe('custom policy', () => {
  test('is asked with a view of the queue, and can hold a batch until woken', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const seen: Array<{ rows: number; now: number }> = [];
    const host = new ModelHost(model.fn, {
      maxBatchSize: 10,
      clock,
      policy: {
        name: 'threes',
        decide: (q) => {
          seen.push({ rows: q.queuedRows, now: q.now });
          return q.queuedRows >= 3 ? { release: true, maxRows: 3, reason: 'full' } : { release: false, wakeAt: q.now + 100 };
        },
      },
    });
    for (let i = 0; i < 5; i++) host.inference(i);
    await settle();
    expect(model.sizes).toEqual([3]);
    model.answer(0, (x) => x);
    await settle();
    expect(model.sizes).toEqual([3]);
    clock.advance(100);
    await settle();
    expect(seen.at(-1)).toEqual({ rows: 2, now: 100 });
    host.inference(5);
    await settle();
    expect(model.sizes).toEqual([3, 3]);
  });

  test('a policy that throws releases instead of stalling', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const host = new ModelHost(async (xs: readonly number[]) => xs, {
      maxBatchSize: 4,
      policy: {
        name: 'broken',
        decide: () => {
          throw new Error('policy bug');
        },
      },
    });
    await expect(host.inference(7)).resolves.toBe(7);
    warn.mockRestore();
  });
});
