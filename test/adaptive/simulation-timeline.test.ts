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

describe('simulate: the jitter of run times', () => {
  // One row per batch, 10 ms with 10% jitter, requests 100 ms apart: each answer's latency is its
  // batch's run time, so the latencies (sorted) are the jitter factors times 10 ms.
  const model: SimModel = { a: 10, b: 0, maxBatchSize: 1, maxLatencyMs: 1000, jitterCv: 0.1 };
  const arrivals = Array.from({ length: 20 }, (_, i) => i * 100);
  const runTimes = async (m: SimModel): Promise<readonly number[]> => (await simulate(m, { kind: 'fixed', maxDelayMs: 0 }, arrivals)).latencies;

  test('jitterSeed seeds the factors: the default is seed 4242, and another seed draws another sequence', async () => {
    const byDefault = await runTimes(model);
    expect(new Set(byDefault).size).toBe(arrivals.length); // jittered: no two alike
    expect(await runTimes({ ...model, jitterSeed: 4242 })).toEqual(byDefault);
    const other = await runTimes({ ...model, jitterSeed: 4243 });
    expect(other).not.toEqual(byDefault);
    expect(await runTimes({ ...model, jitterSeed: 4243 })).toEqual(other); // and the same seed the same
    // Still a jitter around the model's cost: a mean near 10 ms.
    const mean = other.reduce((x, y) => x + y, 0) / other.length;
    expect(mean).toBeGreaterThan(9);
    expect(mean).toBeLessThan(11);
  });
});
