import { ModelHost } from '../../src/engine/model-host';
import { DeadlineExceededError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import type { BatchEvent } from '../../src/core/observer';
import type { HostOptions } from '../../src/core/options';
import { ControlledModel, settle, track } from '../support/controlled-model';

function setup(options: Omit<HostOptions<number, number>, 'clock' | 'observer'>) {
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const events: BatchEvent[] = [];
  const host = new ModelHost(model.fn, { ...options, clock, observer: { onBatch: (e) => events.push(e) } });
  return { clock, model, host, events };
}

describe('priorities: a timeout and a batching window per priority level', () => {
  test("each level waits its own window from its own oldest request; the first window to end releases the batch, in priority order", async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 8, maxDelayMs: 10, priorities: { 1: { maxDelayMs: 2 } } });
    const bulk = [1, 2].map((x) => track(host.inference(x))); // level 0: window ends at 10
    await settle();
    clock.advance(5);
    const urgent = track(host.inference(100, { priority: 1 })); // level 1: window ends at 5 + 2 = 7
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(1.9);
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(0.1); // t = 7
    await settle();
    expect(model.calls[0]!.items).toEqual([100, 1, 2]);
    model.answer(0, (x) => -x);
    await settle();
    expect(events[0]).toMatchObject({ reason: 'timer', startedAt: 7 });
    expect([urgent.value, ...bulk.map((b) => b.value)]).toEqual([-100, -1, -2]);
    await host.stop();
  });

  test('a level with maxDelayMs 0 releases at once what it joins, even when the host waits', async () => {
    const { model, host, events } = setup({ maxBatchSize: 8, maxDelayMs: 50, priorities: { 5: { maxDelayMs: 0 } } });
    void host.inference(1);
    await settle();
    expect(model.sizes).toEqual([]);
    void host.inference(2, { priority: 5 });
    await settle();
    expect(model.calls[0]!.items).toEqual([2, 1]);
    model.answer(0, (x) => x);
    await settle();
    expect(events[0]!.reason).toBe('idle');
    await host.stop();
  });

  test("a level's timeoutMs is its requests' default; a request's own timeoutMs wins; plain requests are level 0", async () => {
    const { clock, model, host } = setup({ maxBatchSize: 8, priorities: { 0: { timeoutMs: 50 }, 1: { timeoutMs: 500 } } });
    const busy = host.inference(0, { timeoutMs: 10_000 }); // occupies the model
    await settle();
    const plain = track(host.inference(1));
    const level1 = track(host.inference(2, { priority: 1 }));
    const own = track(host.inference(3, { priority: 1, timeoutMs: 20 }));
    const explicit0 = track(host.inference(4, { priority: 0 }));
    await settle();
    clock.advance(20);
    await settle();
    expect(own.state).toBe('rejected');
    expect([plain.state, level1.state, explicit0.state]).toEqual(['pending', 'pending', 'pending']);
    clock.advance(30); // t = 50
    await settle();
    expect(plain.error).toBeInstanceOf(DeadlineExceededError);
    expect(explicit0.error).toBeInstanceOf(DeadlineExceededError);
    expect(level1.state).toBe('pending');
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => x * 10);
    await settle();
    expect(level1.value).toBe(20);
    await busy;
    await host.stop();
  });

  test('bad priorities are refused with what was expected and what came', () => {
    const make = (priorities: unknown) => () => new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 4, priorities: priorities as never });
    expect(make([1])).toThrow(new TypeError('ModelHost: expected `priorities` to be an object keyed by priority level, e.g. { 1: { maxDelayMs: 0, timeoutMs: 200 } }, got an array of length 1'));
    expect(make({ high: {} })).toThrow(new TypeError('ModelHost: expected `priorities` to be keyed by priority levels (finite numbers), got "high" (string)'));
    expect(make({ 1: 5 })).toThrow(new TypeError('ModelHost: expected `priorities[1]` to be an object { timeoutMs?, maxDelayMs? }, got 5 (number)'));
    expect(make({ 1: { delay: 3 } })).toThrow(new TypeError('ModelHost: priorities[1]: unknown option `delay`; the known options are `timeoutMs`, `maxDelayMs`'));
    expect(make({ 1: { maxDelayMs: -1 } })).toThrow(new RangeError('ModelHost: expected `priorities[1].maxDelayMs` to be a number of milliseconds >= 0, got -1 (number)'));
    expect(make({ '-2': { timeoutMs: 0 } })).toThrow(new RangeError('ModelHost: expected `priorities[-2].timeoutMs` to be a number of milliseconds > 0 (or Infinity), got 0 (number)'));
  });
});

describe('preferredBatchSizes', () => {
  test('the largest preferred size the queue reaches goes at once; the rest follow', async () => {
    const { model, host, events } = setup({ maxBatchSize: 32, preferredBatchSizes: [16, 8] });
    const busy = host.inference(0);
    await settle();
    const waiting = Array.from({ length: 21 }, (_, i) => host.inference(i + 1));
    await settle();
    model.answer(0, (x) => x);
    await settle();
    expect(model.sizes).toEqual([1, 16]);
    model.answer(1, (x) => x);
    await settle();
    expect(events[1]).toMatchObject({ rows: 16, reason: 'full' });
    // 5 left: below the smallest preferred size, and no window to wait in (maxDelayMs 0).
    expect(model.sizes).toEqual([1, 16, 5]);
    model.answer(2, (x) => x);
    await expect(Promise.all(waiting)).resolves.toHaveLength(21);
    await busy;
    await host.stop();
  });

  test('below the smallest preferred size, the window is spent waiting for it; a full preferred batch ends the wait early', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 16, maxDelayMs: 10, preferredBatchSizes: [4] });
    void host.inference(1);
    void host.inference(2);
    await settle();
    expect(model.sizes).toEqual([]);
    clock.advance(3);
    void host.inference(3);
    void host.inference(4);
    await settle();
    expect(model.sizes).toEqual([4]);
    model.answer(0, (x) => x);
    await settle();
    expect(events[0]).toMatchObject({ reason: 'full', startedAt: 3 });
    void host.inference(5);
    await settle();
    clock.advance(10); // no preferred size reached: the window closes and the lone request goes
    await settle();
    expect(model.sizes).toEqual([4, 1]);
    model.answer(1, (x) => x);
    await settle();
    expect(events[1]).toMatchObject({ reason: 'timer' });
    await host.stop();
  });

  test('bad preferredBatchSizes are refused naming the allowed range', () => {
    const make = (sizes: unknown) => () => new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 8, preferredBatchSizes: sizes as never });
    expect(make([])).toThrow(new TypeError('ModelHost: expected `preferredBatchSizes` to be a non-empty array of batch sizes, got an array of length 0'));
    expect(make([4, 16])).toThrow(new RangeError('ModelHost: expected `preferredBatchSizes` to be batch sizes from 1 to maxBatchSize (8), got 16 (number)'));
    expect(make([2.5])).toThrow(RangeError);
  });
});
