import { AdaptivePolicy } from '../../src/core/adaptive-policy';
import { Outrun } from '../../src/core/adaptive-outrun';
import type { QueuedRequestInfo, QueueView } from '../../src/core/policy';

/** Arrivals of one row each, evenly spaced at `rate` rows per ms from `from` to `to` (ms); the last one's verdict. */
function arrive(o: Outrun, from: number, to: number, rate: number, budget = 100): boolean {
  let verdict = false;
  for (let t = from; t <= to; t += 1 / rate) verdict = o.arrived(t, 1, 1, 32, budget, () => rate);
  return verdict;
}

/** A busy period from 0 on a model whose full batch of 32 takes 16 ms (its own speed: 2 rows per ms). */
function busy(): Outrun {
  const o = new Outrun(1000);
  o.fullBatch(0, 16);
  o.idle(0);
  return o;
}

describe('Outrun: a sustained overload told from a burst and from a slow spell', () => {
  test('arrivals 20% above the model over a busy period a budget long outrun it; at 95% they do not', () => {
    const over = busy();
    expect(arrive(over, 0.5, 99, 2.4)).toBe(false); // not yet a budget long
    expect(arrive(over, 99.5, 150, 2.4)).toBe(true);

    const below = busy();
    expect(arrive(below, 0.5, 500, 1.9)).toBe(false);
  });

  test('5% above is within what bursts explain (the ratio is 1.1); 12% above is not', () => {
    const a = busy();
    expect(arrive(a, 0.5, 400, 2.1)).toBe(false);
    const b = busy();
    expect(arrive(b, 0.5, 400, 2.24)).toBe(true);
  });

  test('an arrival that finds a slot free starts a new busy period: the count begins again', () => {
    const o = busy();
    expect(arrive(o, 0.5, 150, 2.4)).toBe(true);
    o.idle(150);
    expect(arrive(o, 150.5, 240, 2.4)).toBe(false); // 90 ms into the new busy period
    expect(arrive(o, 240.5, 260, 2.4)).toBe(true);
  });

  test('once outrun, a busy period stays so until it ends, though the arrivals slow down', () => {
    const o = busy();
    expect(arrive(o, 0.5, 150, 2.4)).toBe(true);
    // 150 ms at 2.4 and 250 at 1.0 rows per ms: 1.5 a ms over the busy period, under 1.1 × 2.
    expect(arrive(o, 150.5, 400, 1)).toBe(true);
    o.idle(400);
    expect(arrive(o, 400.5, 900, 1)).toBe(false);
  });

  test('a slow spell does not lower the model\'s own speed: the fastest full batch of the last one to two epochs counts', () => {
    const o = new Outrun(1000);
    o.fullBatch(0, 16);
    o.fullBatch(500, 32); // a spell doubles the estimate
    expect(o.nominalMs).toBe(16);
    o.idle(500);
    // 95% of the model's own speed is 190% of the spell's: not an overload.
    expect(arrive(o, 500.5, 800, 1.9)).toBe(false);
    // The epoch the fast estimate was seen in, and the one after it, pass: then the slow one counts.
    o.fullBatch(1000, 32);
    expect(o.nominalMs).toBe(16);
    o.fullBatch(2000, 32);
    expect(o.nominalMs).toBe(32);
  });

  test('on a host busy for seconds before the onset, 120% is caught by the running excess within 200 ms, where the busy period\'s ratio would take seconds', () => {
    const o = busy();
    expect(arrive(o, 0.5, 3000, 1.9)).toBe(false); // 95% for 3 s, never idle
    // 2.4 rows per ms against 1.05 × 2: the excess grows by 0.3 rows per ms and passes 64 after 213 ms;
    // the ratio over the busy period (5,700 + 2.4·t rows in 3,000 + t ms) passes 1.1 × 2 after 4.5 s.
    expect(arrive(o, 3000.5, 3200, 2.4)).toBe(false);
    expect(arrive(o, 3200.5, 3230, 2.4)).toBe(true);
  });

  test('the excess is counted in requests of the mean size: requests of 4 rows need 256 rows past the rate', () => {
    const rows4 = (o: Outrun, from: number, to: number, rate: number): boolean => {
      let verdict = false;
      for (let t = from; t <= to; t += 4 / rate) verdict = o.arrived(t, 4, 1, 32, 100, () => rate);
      return verdict;
    };
    const o = busy();
    expect(rows4(o, 0.5, 3000, 1.9)).toBe(false);
    // The same 2.4 rows per ms: 256 rows of excess take 853 ms.
    expect(rows4(o, 3000.5, 3800, 2.4)).toBe(false);
    expect(rows4(o, 3800.5, 3900, 2.4)).toBe(true);
  });

  test('arrivals that reach the host in bursts (an inline model\'s run at a time) are an excess only while the last budget\'s rate is above the model', () => {
    /** Every 40 ms (a run 2.5× the full batch's 16 ms) the rows that arrived during it at `rate`, all at once; the verdicts. */
    const bursts = (o: Outrun, from: number, to: number, rate: number): boolean[] => {
      const verdicts: boolean[] = [];
      for (let t = from; t <= to; t += 40) for (let i = 0; i < Math.round(rate * 40); i++) verdicts.push(o.arrived(t, 1, 1, 32, 100, () => rate));
      return verdicts;
    };
    // At 95% each burst is 76 rows, past the 64 of the excess; the rate is not.
    expect(bursts(busy(), 40, 3000, 1.9).some((v) => v)).toBe(false);
    // At 120% the same bursts outrun it.
    expect(bursts(busy(), 40, 400, 2.4).some((v) => v)).toBe(true);
  });

  test('a slot found free clears the excess: a burst below capacity does not carry over into the next busy period', () => {
    const o = busy();
    expect(arrive(o, 0.5, 3000, 1.9)).toBe(false);
    expect(arrive(o, 3000.5, 3150, 2.4)).toBe(false); // 45 rows of excess
    o.idle(3150);
    // 90 ms more would bring the excess to 72 rows; the new busy period counts 27, and is not a budget long.
    expect(arrive(o, 3150.5, 3240, 2.4)).toBe(false);
  });

  test('the speed is trusted only a budget after it was first recorded, and never before one is', () => {
    const o = new Outrun(1000);
    o.idle(0);
    expect(o.nominalMs).toBe(Infinity);
    expect(arrive(o, 0.5, 300, 3)).toBe(false); // nothing recorded: never
    o.fullBatch(300, 16);
    expect(arrive(o, 300.5, 399, 3)).toBe(false); // recorded 99 ms ago
    expect(arrive(o, 399.5, 401, 3)).toBe(true);
  });
});

describe('AdaptivePolicy: arrivals that outran the model start the overload before any certain miss', () => {
  const req = (enqueuedAt: number, deadline = Infinity): QueuedRequestInfo => ({ enqueuedAt, deadline, rows: 1, priority: 0 });
  const view = (now: number): QueueView => ({
    now,
    queuedRows: 32,
    queuedRequests: 32,
    oldestEnqueuedAt: now,
    earliestDeadline: () => Infinity,
    inFlight: 0,
    freeSlots: 1,
    maxBatchSize: 32,
    maxDelayMs: 0,
    maxLatencyMs: 100,
    requests: () => Array.from({ length: 32 }, () => req(now)),
  });

  /** A policy that learned an exact `a + b·n` ms model (by default 1 + 0.5·n: a full batch of 32 takes 17 ms) from six batches. */
  function taught(a = 1, b = 0.5): AdaptivePolicy {
    const p = new AdaptivePolicy();
    for (const rows of [1, 4, 16, 32, 32, 32]) p.observe({ rows, requests: rows, runMs: a + b * rows, ok: true });
    p.decide(view(0)); // a decision records the host's limits and the model's speed
    return p;
  }

  /** One arrival per `1 / rate` ms from `from` for `ms`, every slot busy, with `queued(t)` rows waiting (its own included). */
  function drive(p: AdaptivePolicy, from: number, ms: number, rate: number, queued: (t: number) => number): boolean[] {
    const verdicts: boolean[] = [];
    for (let t = from; t < from + ms; t += 1 / rate) verdicts.push(p.enqueued(req(t), queued(t), 1));
    return verdicts;
  }

  test('at 120% the overload starts a budget into the busy period, while no request is anywhere near its budget', () => {
    const p = taught();
    expect(p.enqueued(req(100), 1, 0)).toBe(true); // a slot free: the busy period starts here
    // 2.26 rows per ms against 32 / 17 = 1.88: the backlog grows by 0.38 rows per ms, from 40 rows.
    const verdicts = drive(p, 100.5, 200, 2.26, (t) => 40 + Math.floor(0.38 * (t - 100)));
    // Before a budget has passed every arrival is kept (49 rows waiting end at 51 ms: no certain miss)...
    expect(verdicts.slice(0, 220).every(Boolean)).toBe(true);
    // ...then the overload starts by the rate, and those beyond the queue it keeps (38 rows: see below) are refused.
    expect(verdicts.slice(-10).some(Boolean)).toBe(false);
    expect(p.stats).toMatchObject({ overloadsByRate: 1, refusedCertainMiss: 0 });
    expect(p.stats.refusedOverQueue).toBeGreaterThan(0);
    expect(p.goesAhead()).toBe(true);
  });

  test('while that overload holds a batch is not cut for a late head (the onset\'s cascade); without it, it is', () => {
    // 8 requests due at 310 at the head, 24 behind them due at 390: a full batch ends at 317.
    const late = (now: number): QueueView => {
      const reqs = [...Array.from({ length: 8 }, () => req(210)), ...Array.from({ length: 24 }, () => req(290))];
      return { ...view(now), queuedRows: 32, queuedRequests: 32, oldestEnqueuedAt: 210, requests: () => reqs };
    };
    const calm = taught();
    // The longest prefix that ends by 310 if it starts now: 17 rows (1 + 0.5 · 17 = 9.5 ms).
    expect(calm.decide(late(300))).toMatchObject({ release: true, maxRows: 17, reason: 'deadline' });

    const over = taught();
    expect(over.enqueued(req(100), 1, 0)).toBe(true);
    drive(over, 100.5, 200, 2.26, (t) => 40 + Math.floor(0.38 * (t - 100)));
    expect(over.stats.overloadsByRate).toBe(1);
    expect(over.decide(late(300))).toMatchObject({ release: true, maxRows: 32, reason: 'full' });
    // Nobody is shed from the plan either: that waits for the sustained overload (`overloadMs`).
    expect(over.stats.shedOverload).toBe(0);

    // Nor with more than a full batch waiting, overload or not: the model stays busy past this
    // batch anyway, and a cut would save the head by delaying every row behind it.
    const backlog: QueueView = (() => {
      const reqs = [...Array.from({ length: 8 }, () => req(210)), ...Array.from({ length: 32 }, () => req(290))];
      return { ...view(300), queuedRows: 40, queuedRequests: 40, oldestEnqueuedAt: 210, requests: () => reqs };
    })();
    const behind = taught();
    expect(behind.decide(backlog)).toMatchObject({ release: true, maxRows: 32, reason: 'full' });
    expect(behind.stats.deadlineLimited).toBe(0);
  });

  test('the queue kept is what keeps the next batch full: one batch at 150%, a few rows more at 120%', () => {
    // From a budget into the busy period on, `queued` rows waiting (its own included): the arrivals' verdicts.
    const keptAt = (rate: number, queued: number): boolean[] => {
      const p = taught();
      p.enqueued(req(100), 1, 0);
      drive(p, 100.5, 110, rate, () => 100); // the overload starts, by the rate, past the 96 rows below
      expect(p.stats.overloadsByRate).toBe(1);
      return drive(p, 210.5, 20, rate, () => queued);
    };
    // 150%: 2.82 rows per ms bring 48 rows while a batch runs, so one batch waiting keeps the next full.
    expect(keptAt(2.82, 32).every(Boolean)).toBe(true);
    expect(keptAt(2.82, 33).some(Boolean)).toBe(false);
    // 120%: 38.4 ± 6.2 rows arrive per batch; 32 + (32 - 38.4 + 2 · 6.2) = 37.98 rows keep it full.
    expect(keptAt(2.26, 37).every(Boolean)).toBe(true);
    expect(keptAt(2.26, 39).some(Boolean)).toBe(false);
  });

  /** The rows kept under an overload started by arrivals at 150% of an `a + b·n` ms model: the verdicts for `queued` rows waiting. */
  function keptAt150(a: number, b: number, queued: number): boolean[] {
    const p = taught(a, b);
    p.enqueued(req(100), 1, 0);
    const rate = (1.5 * 32) / (a + 32 * b);
    drive(p, 100.5, 110, rate, () => 5 * 32);
    expect(p.stats.overloadsByRate).toBe(1);
    return drive(p, 210.5, 20, rate, () => queued);
  }

  test('on a model with a large fixed cost two batches wait: a doubled run time, read 10% slow, still ends them in time', () => {
    // 10 + 0.1·n ms: a full batch takes 13.2 ms, 29 doubled and read 10% slow; the back of 64 rows
    // ends within 3 of them (87 ms of the 100 ms budget).
    expect(keptAt150(10, 0.1, 64).every(Boolean)).toBe(true);
    expect(keptAt150(10, 0.1, 65).some(Boolean)).toBe(false);
  });

  test('a slow spell does not shrink those two batches: they are counted at the model\'s own speed, which a spell doubles at most', () => {
    const p = taught(10, 0.1);
    p.enqueued(req(100), 1, 0);
    const rate = (1.5 * 32) / 13.2;
    drive(p, 100.5, 110, rate, () => 5 * 32);
    expect(p.stats.overloadsByRate).toBe(1);
    // A spell: full batches at twice their time lift the estimate past 15 ms, where doubled and read
    // 10% slow two batches behind the running one would pass the budget; the spell's own doubling is
    // what the two batches were kept to survive.
    for (let i = 0; i < 6; i++) p.observe({ rows: 32, requests: 32, runMs: 26.4, ok: true });
    expect(p.latencyModel.predict(32)).toBeGreaterThan(15);
    expect(drive(p, 210.5, 20, rate, () => 64).every(Boolean)).toBe(true);
    expect(drive(p, 230.5, 20, rate, () => 65).some(Boolean)).toBe(false);
  });

  test('a full batch of 16 ms keeps one batch waiting at 150%: three doubled batches would take 96 ms of the 100, too near to count on', () => {
    // 0.5·n ms: doubled and read 10% slow a full batch is 35.2 ms, and three of them pass the budget.
    expect(keptAt150(0, 0.5, 32).every(Boolean)).toBe(true);
    expect(keptAt150(0, 0.5, 33).some(Boolean)).toBe(false);
  });

  test('arrivals that outran the model start the overload only once the queue holds more than a 1.25× slowdown ends in time', () => {
    // 1 + 0.5·n ms: a full batch of 17 ms, run 1.25× slow and read 10% slow, fits the budget 4
    // times: the running batch and 3 behind it, 96 rows. Up to them a greedy host answers in time.
    const p = taught();
    p.enqueued(req(100), 1, 0);
    expect(drive(p, 100.5, 110, 2.82, () => 96).every(Boolean)).toBe(true);
    expect(p.stats).toMatchObject({ overloadsByRate: 0, shedAtArrival: 0 });
    // The rate's verdict holds for the busy period: at 97 rows the overload starts though the
    // arrivals have slowed to 95%, and the queue is cut to what it keeps at 150% (one batch).
    expect(drive(p, 210.5, 5, 1.79, () => 97).some(Boolean)).toBe(false);
    expect(p.stats.overloadsByRate).toBe(1);
  });

  test('at 95% with the same backlog nothing is refused and no overload starts', () => {
    const p = taught();
    expect(p.enqueued(req(100), 1, 0)).toBe(true);
    const verdicts = drive(p, 100.5, 300, 1.79, () => 60);
    expect(verdicts.every(Boolean)).toBe(true);
    expect(p.stats).toMatchObject({ overloadsByRate: 0, shedAtArrival: 0 });
    expect(p.goesAhead()).toBe(false);
  });
});
