// The plain lane: requests without per-request options on a greedy host are queued as parallel
// arrays, already cut into batches, instead of request objects. These tests pin what must not
// change when a request takes it: FIFO order with requests that need objects, enqueue times in
// reports and windows, batch sizes after configure(), and every way a waiting request can end.
import { ModelHost } from '../../src/engine/model-host';
import { LaneBatch, PlainLane } from '../../src/engine/plain-lane';
import { ManualClock } from '../../src/core/manual-clock';
import { DeadlineExceededError, HostStoppedError, QueueFullError } from '../../src/core/errors';
import type { BatchEvent, RequestEvent } from '../../src/core/observer';
import type { HostOptions } from '../../src/core/options';
import { ControlledModel, settle, track } from '../support/controlled-model';

function setup(options: Omit<HostOptions<number, number>, 'clock' | 'observer'>) {
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const batches: BatchEvent[] = [];
  const requests: RequestEvent[] = [];
  const host = new ModelHost(model.fn, {
    ...options,
    clock,
    observer: { onBatch: (e) => batches.push(e), onRequest: (e) => requests.push(e) },
  });
  return { clock, model, host, batches, requests };
}

/**
 * Holds the only batch slot with a first request, so that what follows waits in the queue. Returns
 * its promise in a box: an async function returning a promise would wait for it.
 */
async function busy(host: ModelHost<number, number>, model: ControlledModel<number, number>): Promise<{ first: Promise<number> }> {
  const first = host.inference(-1);
  await settle();
  expect(model.sizes).toEqual([1]);
  return { first };
}

describe('PlainLane', () => {
  const noop = (): void => undefined;

  test('forms batches of maxRows as requests arrive and hands the first one over whole', () => {
    const lane = new PlainLane<number, number>();
    lane.stamp(5);
    for (let i = 0; i < 10; i++) lane.push(i, noop, 4);
    expect(lane.size).toBe(10);
    const first = lane.take(4);
    expect(first).toBeInstanceOf(LaneBatch);
    expect(first.items).toEqual([0, 1, 2, 3]);
    expect([first.length, first.rows, lane.size]).toEqual([4, 4, 6]);
    expect(lane.take(4).items).toEqual([4, 5, 6, 7]);
    expect(lane.take(4).items).toEqual([8, 9]); // the last, partly filled, batch
    expect(lane.size).toBe(0);
  });

  test('a batch larger than its presized arrays grows past them, and leaves the lane trimmed to what it holds', () => {
    const lane = new PlainLane<number, number>();
    lane.stamp(0);
    for (let i = 0; i < 700; i++) lane.push(i, noop, 300);
    const a = lane.take(300);
    expect([a.items.length, a.resolves.length, a.length]).toEqual([300, 300, 300]);
    expect(a.items).toEqual(Array.from({ length: 300 }, (_, i) => i));
    lane.take(300);
    const rest = lane.take(300);
    expect([rest.items.length, rest.resolves.length]).toEqual([100, 100]);
    expect(Object.keys(rest.items)).toHaveLength(100); // no holes handed to a batch function
  });

  test('cuts a formed batch when fewer rows are wanted, and joins formed batches when more are', () => {
    const lane = new PlainLane<number, number>();
    lane.stamp(0);
    for (let i = 0; i < 10; i++) lane.push(i, noop, 4);
    expect(lane.take(3).items).toEqual([0, 1, 2]);
    expect(lane.take(6).items).toEqual([3, 4, 5, 6, 7, 8]);
    expect(lane.take(6).items).toEqual([9]);
  });

  test('keeps each request\'s enqueue time through runs, cuts and joins', () => {
    const lane = new PlainLane<number, number>();
    const at = [0, 0, 1, 1, 1, 2, 3, 3, 3, 3];
    at.forEach((t, i) => {
      lane.stamp(t);
      lane.push(i, noop, 4);
    });
    expect(lane.oldestEnqueuedAt()).toBe(0);
    const a = lane.take(3);
    expect([0, 1, 2].map((i) => a.enqueuedAt(i))).toEqual([0, 0, 1]);
    expect(lane.oldestEnqueuedAt()).toBe(1);
    const b = lane.take(5);
    expect([0, 1, 2, 3, 4].map((i) => b.enqueuedAt(i))).toEqual([1, 1, 2, 3, 3]);
    expect(lane.oldestEnqueuedAt()).toBe(3);
    const c = lane.take(8);
    expect([c.enqueuedAt(0), c.enqueuedAt(1)]).toEqual([3, 3]);
  });

  test('a stamp with an unchanged time keeps the run going; clear() returns what waits', () => {
    const lane = new PlainLane<number, number>();
    lane.stamp(7);
    lane.push(1, noop, 8);
    lane.stamp(7);
    lane.push(2, noop, 8);
    const all = lane.clear();
    expect(all).toHaveLength(1);
    expect((all[0] as LaneBatch<number, number>).runTimes).toEqual([7]);
    expect(lane.size).toBe(0);
    lane.stamp(8);
    lane.push(3, noop, 8); // a new batch after clear(), not the cleared one
    expect(lane.take(8).items).toEqual([3]);
  });
});

describe('plain requests on a host', () => {
  test('FIFO holds when a request with options joins plain ones that wait, and after it', async () => {
    const { model, host } = setup({ maxBatchSize: 4 });
    const { first } = await busy(host, model);
    const ps = [
      host.inference(1),
      host.inference(2),
      host.inference(3, { timeoutMs: 1000 }), // needs a request object: the lane moves into the queue
      host.inference(4),
      host.inference(5, { priority: 1 }), // jumps ahead of level 0
      host.inference(6, { priority: -1 }), // goes after it
      host.inference(7),
    ];
    await settle();
    for (let call = 0; call < 3; call++) {
      model.answer(call, (x) => x * 10);
      await settle();
    }
    expect(model.calls.map((c) => c.items)).toEqual([[-1], [5, 1, 2, 3], [4, 7, 6]]);
    await expect(first).resolves.toBe(-10);
    await expect(Promise.all(ps)).resolves.toEqual([10, 20, 30, 40, 50, 60, 70]);
  });

  test('batch reports and request reports carry each plain request\'s own wait', async () => {
    const { clock, model, host, batches, requests } = setup({ maxBatchSize: 8 });
    const { first } = await busy(host, model);
    const a = host.inference(1);
    clock.advance(4);
    const b = host.inference(2);
    clock.advance(6);
    model.answer(0, (x) => x);
    await settle();
    clock.advance(3);
    model.answer(1, (x) => x + 1);
    await expect(Promise.all([first, a, b])).resolves.toEqual([-1, 2, 3]);
    await settle();
    expect(batches[1]).toMatchObject({ requests: 2, queueWaitOldestMs: 10, queueWaitMeanMs: 8 });
    expect(requests.slice(1).map((e) => [e.outcome, e.queueMs, e.runMs, e.totalMs])).toEqual([
      ['ok', 10, 3, 13],
      ['ok', 6, 3, 9],
    ]);
  });

  test('plain requests moved into the queue keep their enqueue time (the window counts from it)', async () => {
    const { clock, model, host } = setup({ maxBatchSize: 8, maxDelayMs: 50 });
    const first = host.inference(-1);
    clock.advance(50); // a lone request waits for the window
    await settle();
    const plain = host.inference(1); // t=50
    clock.advance(20);
    const signalled = host.inference(2, { signal: new AbortController().signal }); // t=70: needs an object
    model.answer(0, (x) => x);
    await settle();
    clock.advance(29); // t=99: the window of the oldest (t=50) has not closed
    await settle();
    expect(model.sizes).toEqual([1]);
    clock.advance(1); // t=100
    await settle();
    expect(model.calls[1]?.items).toEqual([1, 2]);
    model.answer(1, (x) => x * 2);
    await expect(Promise.all([first, plain, signalled])).resolves.toEqual([-1, 2, 4]);
  });

  test('the maxDelayMs window counts from the oldest plain request left after a cut', async () => {
    const { clock, model, host, batches } = setup({ maxBatchSize: 8, maxDelayMs: 10, preferredBatchSizes: [2] });
    const first = host.inference(-1);
    clock.advance(10);
    await settle();
    host.inference(1); // t=10
    host.inference(2);
    clock.advance(4);
    const last = host.inference(3); // t=14
    model.answer(0, (x) => x);
    await settle();
    expect(model.calls[1]?.items).toEqual([1, 2]); // a preferred size: released at once
    model.answer(1, (x) => x);
    await settle();
    expect(model.sizes).toEqual([1, 2]); // 3 waits for its own window, from t=14
    clock.advance(9);
    await settle();
    expect(model.sizes).toEqual([1, 2]);
    clock.advance(1);
    await settle();
    expect(model.sizes).toEqual([1, 2, 1]);
    model.answer(2, (x) => x);
    await expect(Promise.all([first, last])).resolves.toEqual([-1, 3]);
    await settle();
    expect(batches.map((b) => b.reason)).toEqual(['timer', 'full', 'timer']);
  });

  test('configure() re-cuts batches formed at the old maxBatchSize, both ways', async () => {
    const { model, host } = setup({ maxBatchSize: 4 });
    const { first } = await busy(host, model);
    const ps = Array.from({ length: 10 }, (_, i) => host.inference(i)); // formed as 4, 4, 2
    host.configure({ maxBatchSize: 3 });
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => x);
    await settle();
    host.configure({ maxBatchSize: 8 });
    model.answer(2, (x) => x);
    await settle();
    expect(model.sizes).toEqual([1, 3, 3, 4]);
    expect(model.calls.slice(1).flatMap((c) => c.items)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    model.answer(3, (x) => x);
    await expect(Promise.all([first, ...ps])).resolves.toEqual([-1, ...Array.from({ length: 10 }, (_, i) => i)]);
  });

  test('an Error result rejects only its own plain caller, counted as an error', async () => {
    const { model, host } = setup({ maxBatchSize: 4 });
    const ps = [1, 2, 3].map((x) => track(host.inference(x)));
    await settle();
    model.answer(0, (x) => (x === 2 ? new RangeError('bad item 2') : x));
    await settle();
    expect(ps.map((p) => p.state)).toEqual(['resolved', 'rejected', 'resolved']);
    expect(ps[1]?.error).toEqual(new RangeError('bad item 2'));
    expect(host.stats.rejected.error).toBe(1);
  });

  test('a plain request moved into the queue still rejects with its own Error result', async () => {
    const { model, host } = setup({ maxBatchSize: 4 });
    const { first } = await busy(host, model);
    const plain = track(host.inference(1));
    const timed = track(host.inference(2, { timeoutMs: 1000 })); // moves `plain` into the queue
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => (x === 1 ? new TypeError('bad row 1') : x));
    await settle();
    await expect(first).resolves.toBe(-1);
    expect(plain.state).toBe('rejected');
    expect(plain.error).toEqual(new TypeError('bad row 1'));
    expect(timed).toMatchObject({ state: 'resolved', value: 2 });
    expect(host.stats.rejected.error).toBe(1);
  });

  test('batchTimeoutMs rejects every plain request of a hung batch with each one\'s wait, and drops the late result', async () => {
    const { clock, model, host } = setup({ maxBatchSize: 4, batchTimeoutMs: 100 });
    const first = track(host.inference(1));
    await settle();
    const queued = track(host.inference(2));
    clock.advance(100);
    await settle();
    expect(first.state).toBe('rejected');
    expect(first.error).toBeInstanceOf(DeadlineExceededError);
    expect(first.error?.message).toBe(
      'microbatch: the batch this request was in ran longer than batchTimeoutMs (100 ms); its result will be discarded',
    );
    expect((first.error as DeadlineExceededError).elapsedMs).toBe(100);
    model.answer(0, (x) => x); // late: ignored
    await settle();
    expect(first.state).toBe('rejected');
    expect(model.sizes).toEqual([1, 1]);
    model.answer(1, (x) => x * 3);
    await settle();
    expect(queued).toMatchObject({ state: 'resolved', value: 6 });
    expect(host.stats.rejected.deadline).toBe(1);
  });

  test('stop({ drain: false }) rejects waiting plain requests with HostStoppedError; the running batch still answers', async () => {
    const { model, host, requests } = setup({ maxBatchSize: 4 });
    const { first } = await busy(host, model);
    const waiting = [1, 2, 3, 4, 5].map((x) => track(host.inference(x)));
    const stopped = host.stop({ drain: false });
    await settle();
    expect(waiting.map((w) => w.state)).toEqual(Array(5).fill('rejected'));
    for (const w of waiting) {
      expect(w.error).toBeInstanceOf(HostStoppedError);
      expect(w.error?.message).toBe('microbatch: the host was stopped without draining before this request ran');
    }
    expect(host.stats.rejected.stopped).toBe(5);
    expect(requests.filter((e) => e.outcome === 'stopped')).toHaveLength(5);
    model.answer(0, (x) => x * 2);
    await expect(first).resolves.toBe(-2);
    await stopped;
  });

  test('a failed start rejects waiting plain requests with the start error', async () => {
    const error = new Error('model file missing');
    // An executor whose start fails: the requests queued before it settle with its error.
    const h = new ModelHost<number, number>({ run: async (xs: readonly number[]) => xs, start: () => Promise.reject(error) }, { maxBatchSize: 4 });
    const ps = [1, 2, 3].map((x) => track(h.inference(x)));
    await settle();
    expect(ps.map((p) => p.error)).toEqual([error, error, error]);
    await expect(h.inference(4)).rejects.toBe(error); // and later ones, at once
    await h.stop();
  });

  test('maxQueueSize counts plain requests: the next one is refused with QueueFullError', async () => {
    const { model, host } = setup({ maxBatchSize: 4, maxQueueSize: 3 });
    const { first } = await busy(host, model);
    const ok = [1, 2, 3].map((x) => host.inference(x));
    await expect(host.inference(4)).rejects.toThrow(QueueFullError);
    await expect(host.inference(5, { timeoutMs: 50 })).rejects.toThrow(
      'microbatch: the queue is full (maxQueueSize is 3 waiting requests); the request was refused without being queued. Retry later or raise maxQueueSize.',
    );
    expect(host.stats.rejected.queueFull).toBe(2);
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => x);
    await expect(Promise.all([first, ...ok])).resolves.toEqual([-1, 1, 2, 3]);
  });
});
