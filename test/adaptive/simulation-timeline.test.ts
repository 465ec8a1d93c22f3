import { simulate, type SimModel } from './simulation';

describe('simulate: outcomes by send time', () => {
  // One row per batch at 10 ms each, one request may wait, a 15 ms budget: the request sent at 0
  // runs at once, the one at 1 waits for it (answered at 20: late), the one at 2 finds the queue
  // full (refused), the one at 25 finds the model idle.
  const model: SimModel = { a: 10, b: 0, maxBatchSize: 1, maxLatencyMs: 15 };
  const arrivals = [0, 1, 2, 25];

  test('timeline(binMs) counts each request once, in the bin of its send time, as on time, late or refused', async () => {
    const r = await simulate(model, { kind: 'fixed', maxDelayMs: 0, maxQueueSize: 1 }, arrivals);
    expect(r.timeline(10)).toEqual({ onTime: [1, 0, 1], late: [1, 0, 0], refused: [1, 0, 0] });
    // One bin for the whole run; a send time on a bin's edge counts in the later bin.
    expect(r.timeline(1000)).toEqual({ onTime: [2], late: [1], refused: [1] });
    // The last send time (25) lies on a bin's edge, so it opens a bin of its own.
    expect(r.timeline(1).onTime).toHaveLength(26);
    expect(r.timeline(1).onTime[25]).toBe(1);
  });

  test('onTimeSentFrom(t) and overSloSentFrom(t) split the answers at a send time', async () => {
    const r = await simulate(model, { kind: 'fixed', maxDelayMs: 0, maxQueueSize: 1 }, arrivals);
    expect([r.onTimeSentFrom(0), r.overSloSentFrom(0)]).toEqual([2, 1]);
    expect([r.onTimeSentFrom(1), r.overSloSentFrom(1)]).toEqual([1, 1]);
    expect([r.onTimeSentFrom(2), r.overSloSentFrom(2)]).toEqual([1, 0]);
    expect(r.onTimeSentFrom(26)).toBe(0);
  });
});
