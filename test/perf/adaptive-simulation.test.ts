import { poissonArrivals, rateForLoad, simulate, type SimModel, type SimResult } from '../adaptive/simulation';

/**
 * Adaptive against the best fixed `maxDelayMs` from a grid, on the same seeded Poisson arrivals,
 * at 30 %, 70 % and 95 % of the model's full-batch throughput. Two models: a moderate fixed cost
 * and one where the fixed cost dominates (where waiting is most tempting).
 */
const GRID = [0, 1, 2, 5, 10, 20];
const LOADS = [0.3, 0.7, 0.95];
const REQUESTS = 4000;
const MODELS: Array<SimModel & { label: string }> = [
  { label: 'a=5 b=0.5', a: 5, b: 0.5, maxBatchSize: 32, maxLatencyMs: 100 },
  { label: 'a=20 b=0.2', a: 20, b: 0.2, maxBatchSize: 32, maxLatencyMs: 150 },
];

const fmt = (r: SimResult) => `p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(2)}, shed ${r.shed}`;

describe.each(MODELS)('simulation, model $label', (model) => {
  test.each(LOADS)('load %p: adaptive p99 within 10%% of the best fixed maxDelayMs, and no shedding where that meets the SLO', async (load) => {
    const arrivals = poissonArrivals(rateForLoad(model, load), REQUESTS, 7);
    const fixed = new Map<number, SimResult>();
    for (const d of GRID) fixed.set(d, await simulate(model, { kind: 'fixed', maxDelayMs: d }, arrivals));
    const adaptive = await simulate(model, { kind: 'adaptive' }, arrivals);
    const [bestDelay, best] = [...fixed.entries()].reduce((x, y) => (y[1].p99 < x[1].p99 ? y : x));
    // The numbers behind the assertion, for the report and for anyone tuning the policy.
    console.log(
      `${model.label} load ${load}: ` +
        [...fixed.entries()].map(([d, r]) => `fixed ${d}: ${fmt(r)}`).join('; ') +
        `; adaptive: ${fmt(adaptive)}; best fixed = ${bestDelay}`,
    );
    expect(best.answered).toBe(REQUESTS);
    expect(adaptive.answered + adaptive.shed).toBe(REQUESTS);
    expect(adaptive.p99).toBeLessThanOrEqual(best.p99 * 1.1);
    // Both models keep the best fixed setting within the SLO up to 95 % load, so the no-shedding
    // rule applies at every load here; asserting that keeps it from being skipped silently.
    expect(best.max).toBeLessThanOrEqual(model.maxLatencyMs);
    expect(adaptive.shed).toBe(0);
    expect(adaptive.overSlo).toBe(0);
    expect(adaptive.rejectedDeadline).toBe(adaptive.shed);
  });
});

describe('simulation with slow spells (a fixed-cost-dominated model; a 2.5× spell of 50 ms every 500 ms)', () => {
  // The shape of the wide MLP in bench/adaptive.ts, and the slow spells of the VM it runs on. The
  // spells cost every setting alike here (they do not make fixed windows beat window 0, as the
  // real 70% cell does: see docs/performance.md §4b), and the policy must track the best setting.
  const model: SimModel = { a: 0.5, b: 0.045, maxBatchSize: 64, maxLatencyMs: 100, spells: { everyMs: 500, lengthMs: 50, factor: 2.5 } };
  test.each(LOADS)('load %p: adaptive p99 within 10%% of the best fixed maxDelayMs, nothing shed', async (load) => {
    const arrivals = poissonArrivals(rateForLoad({ ...model, spells: undefined }, load), 20_000, 7);
    const fixed = await Promise.all([0, 2, 5, 10].map((d) => simulate(model, { kind: 'fixed', maxDelayMs: d }, arrivals)));
    const adaptive = await simulate(model, { kind: 'adaptive' }, arrivals);
    const best = fixed.reduce((x, y) => (y.p99 < x.p99 ? y : x));
    console.log(`spells, load ${load}: fixed p99 ${fixed.map((r) => r.p99.toFixed(2)).join(' / ')}; adaptive: ${fmt(adaptive)}`);
    expect(best.max).toBeLessThanOrEqual(model.maxLatencyMs);
    expect(adaptive.p99).toBeLessThanOrEqual(best.p99 * 1.1);
    expect(adaptive.shed).toBe(0);
  });
});

test('jitter at the edge of the budget: where greedy answers everyone in time, adaptive refuses next to nobody', async () => {
  // The wide MLP's shape with 20 µs a batch of overhead, 20% jitter from batch to batch and a
  // 1.3× spell of 400 ms every 2 s, at 95% of the overhead-free full-batch throughput: greedy's
  // slowest answer comes within 1 ms of the budget. Refusing whatever the plan's reserve (2σ of
  // the chained run times) marks late shed 229 of these requests, all of which greedy answered in
  // time; refusing only those late on the mean sheds 11.
  const model: SimModel = { a: 0.15, b: 0.052, maxBatchSize: 64, maxLatencyMs: 100, jitterCv: 0.2, spells: { everyMs: 2000, lengthMs: 400, factor: 1.3 } };
  const arrivals = poissonArrivals(rateForLoad({ ...model, a: 0.13 }, 0.95), 60_000, 7);
  const greedy = await simulate(model, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
  const adaptive = await simulate(model, { kind: 'adaptive' }, arrivals);
  console.log(`edge of the budget: greedy ${fmt(greedy)}; adaptive ${fmt(adaptive)}`);
  expect(greedy.max).toBeGreaterThan(model.maxLatencyMs * 0.95); // the case is the edge
  expect(greedy.overSlo).toBe(0);
  expect(adaptive.overSlo).toBe(0);
  expect(adaptive.shed).toBeLessThan(arrivals.length / 2000); // under 0.05%
});

test('simulated overload (130 % load): once sustained, the SLO holds for answered requests (but for the batch about to start), goodput stays near capacity', async () => {
  const model = MODELS[0] as SimModel;
  const arrivals = poissonArrivals(rateForLoad(model, 1.3), REQUESTS, 11);
  const overloadMs = 200;
  const adaptive = await simulate(model, { kind: 'adaptive', options: { overloadMs } }, arrivals);
  const greedy = await simulate(model, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
  const after = adaptive.overSloSentFrom(overloadMs + model.maxLatencyMs);
  console.log(`overload 130%: adaptive answered ${adaptive.answered}, shed ${adaptive.shed}, ${fmt(adaptive)}, over SLO after onset ${after}; greedy ${fmt(greedy)}, over SLO ${greedy.overSlo}`);
  expect(after).toBeLessThan(adaptive.answered * 0.05);
  expect(adaptive.max).toBeLessThan(model.maxLatencyMs * 1.2);
  expect(adaptive.shed).toBeGreaterThan(0);
  expect(adaptive.rejectedDeadline).toBe(adaptive.shed);
  const policyStats = adaptive.adaptive!.stats;
  expect(policyStats.shedAlone + policyStats.shedOverload + policyStats.shedAtArrival).toBe(adaptive.shed);
  // Refused as they arrived, not at a later decision: the overload keeps the queue short.
  expect(policyStats.shedAtArrival).toBeGreaterThan(adaptive.shed * 0.9);
  // At 130 % of capacity at most 1/1.3 = 77 % can be answered; shedding must not collapse that.
  expect(adaptive.answered / REQUESTS).toBeGreaterThan(0.7);
  expect(greedy.overSlo).toBeGreaterThan(REQUESTS / 2); // without shedding most answers are late
});
