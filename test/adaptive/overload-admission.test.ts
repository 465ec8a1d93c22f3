import { poissonArrivals, rateForLoad, simulate, type SimModel, type SimResult } from './simulation';

/**
 * The adaptive policy's admission on arrival, played through the real host on the simulated clock
 * (deterministic: the numbers are the same on any machine). Below capacity it must refuse nobody a
 * greedy host would have answered in time; under overload it must refuse at once rather than at a
 * later decision, and serve about what the best hand-tuned queue bound serves.
 *
 * Each test plays 10,000–20,000 requests through the host several times: seconds on a quiet
 * machine, more on a busy one, hence the timeout.
 */
jest.setTimeout(180_000);

const MODELS = [
  { label: '1 ms + 0.5 ms/row', a: 1, b: 0.5 },
  { label: '10 ms + 0.1 ms/row', a: 10, b: 0.1 },
];

/** The fixed-cost model's shape: 10 ms + 0.1 ms/row, batches of 32, a 100 ms budget. */
const FIXED_COST = { a: 10, b: 0.1, maxBatchSize: 32, maxLatencyMs: 100 };

/** The fixed-cost model with run times doubled for batches that start in [`from`, `to`) ms. */
function doubledBetween(from: number, to: number): SimModel {
  return { ...FIXED_COST, cost: (rows, at) => (FIXED_COST.a + FIXED_COST.b * rows) * (at >= from && at < to ? 2 : 1) };
}

describe.each(MODELS)('$label, batches of 32', ({ a, b }) => {
  test.each([7, 8])('95%% Poisson load, deterministic model, the budget just above greedy\'s slowest answer (seed %p): adaptive refuses nobody and answers nobody late', async (seed) => {
    // The case an overload detector fed by the arrival rate gets wrong: Poisson bursts at 95% look
    // like overload for a moment, and a greedy host still answers everyone in time.
    const greedyModel: SimModel = { a, b, maxBatchSize: 32, maxLatencyMs: Infinity };
    const arrivals = poissonArrivals(rateForLoad(greedyModel, 0.95), 20_000, seed);
    const greedy = await simulate(greedyModel, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
    const budget = greedy.max * 1.02;
    const adaptive = await simulate({ ...greedyModel, maxLatencyMs: budget }, { kind: 'adaptive' }, arrivals);
    expect(greedy.answered).toBe(arrivals.length);
    expect(adaptive.shed).toBe(0);
    expect(adaptive.overSlo).toBe(0);
    expect(adaptive.p99).toBeLessThanOrEqual(greedy.p99 * 1.05);
  });

  test.each([1.2, 1.5])('%p of capacity with jitter and slow spells: refusals on arrival, goodput within 2%% of the best tuned queue bound', async (load) => {
    const m: SimModel = { a, b, maxBatchSize: 32, maxLatencyMs: 100, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed: 1 } };
    const rate = rateForLoad(m, load);
    const arrivals = poissonArrivals(rate, Math.round(rate * 4000), 1001);
    const capacity = m.maxBatchSize / (a + b * m.maxBatchSize); // rows per ms
    const goodput = (r: SimResult): number => (r.answered - r.overSlo) / (arrivals.at(-1) as number) / capacity;
    const adaptive = await simulate(m, { kind: 'adaptive' }, arrivals);
    const unbounded = await simulate(m, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
    const bounded = await Promise.all([32, 64].map((q) => simulate(m, { kind: 'fixed', maxDelayMs: 0, maxQueueSize: q }, arrivals)));
    const best = Math.max(...bounded.map(goodput));
    expect(goodput(adaptive)).toBeGreaterThan(0.9);
    expect(goodput(adaptive)).toBeGreaterThan(best * 0.98);
    expect(goodput(adaptive)).toBeGreaterThan(goodput(unbounded) * 5);
    // Refused as they arrived (0 ms on this clock), not at a decision after waiting in the queue.
    expect(adaptive.refusals.filter((t) => t <= 1).length).toBeGreaterThan(adaptive.refusals.length * 0.99);
    expect(adaptive.adaptive?.stats.shedAtArrival).toBeGreaterThan(adaptive.shed * 0.99);
    // One overload, entered once before the backlog reached the budget: by arrivals that outran the
    // model, or on this cold host by a certain miss priced at a slowdown; then nearly all refusals
    // keep the queue short, and nobody sent in the onset is answered late (with the overload started
    // at the backlog's edge, where a certain miss at the model's estimate started it, 58-164 were).
    const stats = adaptive.adaptive?.stats;
    expect((stats?.overloadsByRate ?? 0) + (stats?.refusedCertainMiss ?? 0)).toBe(1);
    expect(adaptive.overSlo - adaptive.overSloSentFrom(1000)).toBe(0);
    expect(stats?.refusedOverQueue).toBeGreaterThan((stats?.shedAtArrival ?? 0) * 0.8);
  });

  test('150% for 2 s, then 95% (6 seeds): the overload ends within 3 budgets of the fall, and nobody at the lower load is late', async () => {
    // At 95% an arrival rarely finds a slot free (batches of about 30 rows run back to back), so
    // the overload must end on the model catching up with the arrivals:
    // before it did, the queue's cap went on refusing for seconds (320 refusals of requests sent
    // 300 ms or more after the fall, in these runs; 165 on the 1 + 0.5·n model).
    const m: SimModel = { a, b, maxBatchSize: 32, maxLatencyMs: 100, jitterCv: 0.1 };
    for (let s = 1; s <= 6; s++) {
      const over = poissonArrivals(rateForLoad(m, 1.5), Math.round(rateForLoad(m, 1.5) * 2000), 2 * s + 3);
      const fall = over.at(-1) as number;
      const after = poissonArrivals(rateForLoad(m, 0.95), Math.round(rateForLoad(m, 0.95) * 3000), 2 * s + 4).map((t) => t + fall);
      const run = await simulate(m, { kind: 'adaptive' }, [...over, ...after]);
      expect(run.shed).toBeGreaterThan(0); // the overload refused
      const refusedBySent = run.timeline(10).refused;
      const lateRefusals = refusedBySent.slice(Math.ceil((fall + 3 * m.maxLatencyMs) / 10)).reduce((p, c) => p + c, 0);
      expect({ seed: s, lateRefusals }).toEqual({ seed: s, lateRefusals: 0 });
      expect(run.overSloSentFrom(fall)).toBe(0);
    }
  });
});

/**
 * A host serving at 70% for 2 s, then `load` from 2 s on for `ms` (arrivals seeded `500 + seed`
 * before and `onsetSeed` after), on the 10 ms + 0.1 ms/row model's shape.
 */
function servingThen(seed: number, load: number, ms: number, onsetSeed: number): number[] {
  const serving = rateForLoad(FIXED_COST, 0.7);
  const rate = rateForLoad(FIXED_COST, load);
  const before = poissonArrivals(serving, Math.round(serving * 2000), 500 + seed).filter((t) => t < 2000);
  return [...before, ...poissonArrivals(rate, Math.round(rate * ms), onsetSeed).map((t) => t + 2000)];
}

describe('10 ms + 0.1 ms/row, a host serving at 70% for 2 s when 120% begins', () => {
  test.each([8, 17, 21])('the onset is caught while the queue is short, though the host was busy for seconds before it (seed %p)', async (seed) => {
    // At 70% this model's batches run back to back, so the busy period's average holds seconds of
    // 70% and read the onset late: 96 / 64 / 96 answers of the onset were late on these seeds.
    const m: SimModel = { ...FIXED_COST, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed } };
    const r = await simulate(m, { kind: 'adaptive' }, servingThen(seed, 1.2, 3000, 1000 + seed));
    expect(r.adaptive?.stats.overloadsByRate).toBeGreaterThanOrEqual(1);
    expect(r.overSloSentFrom(2000)).toBeLessThanOrEqual(10);
  });

  test.each([1, 2, 4])('a 2× slow spell that begins with the onset: the backlog is priced at the slowdown the last batch showed (seed %p)', async (seed) => {
    // The latency model follows the spell a step at a time, so at the old speed the backlog looked
    // in time until it reached the budget: 125 / 135 / 134 answers of the onset were late on these
    // seeds when only the model's estimate priced it.
    const m = doubledBetween(2000, 2150);
    const r = await simulate(m, { kind: 'adaptive' }, servingThen(seed, 1.2, 1000, 900 + seed));
    expect(r.overSloSentFrom(2000)).toBeLessThanOrEqual(70);
    expect(r.overSlo - r.overSloSentFrom(2000)).toBe(0);
  });
});

/** The wide MLP's cost shape: a full batch of 64 rows in 1.4 ms, a 100 ms budget. */
const MLP = { a: 0.09, b: 0.0205, maxBatchSize: 64, maxLatencyMs: 100 };

/** A model of cost `a + b·n` inline (a run holds the event loop), on a machine `factorAt(at)` times its quiet speed. */
function inline(shape: typeof MLP, factorAt: (at: number) => number): SimModel {
  return { ...shape, blocking: true, cost: (rows, at) => (shape.a + shape.b * rows) * factorAt(at) };
}

/** `seconds` of Poisson arrivals at `load` of `m`'s quiet capacity, played through greedy and adaptive. */
async function greedyAndAdaptive(m: SimModel, load: number, seconds: number, arrivalSeed: number): Promise<{ greedy: SimResult; adaptive: SimResult }> {
  const rate = rateForLoad(m, load);
  const arrivals = poissonArrivals(rate, Math.round(rate * seconds * 1000), arrivalSeed);
  return { greedy: await simulate(m, { kind: 'fixed', maxDelayMs: 0 }, arrivals), adaptive: await simulate(m, { kind: 'adaptive' }, arrivals) };
}

describe('an inline model (a run holds the event loop) whose full batch of 64 takes 1.4 ms, 70% load with 2× slow spells', () => {
  test.each([1, 2, 3])('what arrived during a run reaches the host at once, and the burst is not read as an overload (seed %p)', async (seed) => {
    // The running excess after such a burst is the burst: 90 requests in a spell at this load,
    // past its 64, and 1,427 / 1,265 / 1,913 requests a greedy host answered in time were refused.
    const m: SimModel = { ...MLP, jitterCv: 0.1, blocking: true, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed } };
    const { greedy, adaptive } = await greedyAndAdaptive(m, 0.7, 3, 100 + seed);
    expect(greedy.overSlo).toBe(0);
    expect(adaptive.adaptive?.stats.overloadsByRate).toBe(0);
    expect(adaptive.shed + adaptive.overSlo).toBe(0);
  });
});

describe('an inline model whose full batch of 64 takes 1.4 ms, 85% load, the machine 1.3× slow for the first 400 ms', () => {
  test.each([1, 2, 4])('an overload that is only a stretch is absorbed by the queue a doubled run time still ends in time (seed %p)', async (seed) => {
    // 110% of the slow machine's capacity for 400 ms: arrivals outran the model, and with at most
    // two full batches kept the overload refused 1,292 / 1,277 / 1,218 requests on these seeds that
    // a greedy host answered in time (its p99 35-37 ms of the 100 ms budget). A doubled full batch
    // fits the budget about 23 times here, and the queue never grows past that: no overload starts.
    const { greedy, adaptive } = await greedyAndAdaptive(inline(MLP, (at) => (at < 400 ? 1.3 : 1)), 0.85, 1.5, 300 + seed);
    expect(greedy.shed + greedy.overSlo).toBe(0);
    expect(adaptive.shed + adaptive.overSlo).toBe(0);
  });
});

describe('an inline model whose full batch of 64 takes 1.4 ms, 30% load, a 24× stall of the machine for 20 ms early in the run', () => {
  test.each([1, 2, 3])('the batch the stall ran slow does not teach the model its speed, so its backlog is answered, not refused (seed %p)', async (seed) => {
    // The pattern of a live run (28 Nov): the stall's backlog makes a batch of a size not seen yet,
    // run 24× slow; taken as it came, it raised the line's full batch 10-fold, the backlog read as
    // a certain miss and 43 / 51 / 101 requests a greedy host answered in time were refused.
    const { greedy, adaptive } = await greedyAndAdaptive(inline(MLP, (at) => (at >= 80 && at < 100 ? 24 : 1)), 0.3, 1, 100 + seed);
    expect(greedy.shed + greedy.overSlo).toBe(0);
    expect(adaptive.shed + adaptive.overSlo).toBe(0);
  });
});

describe('an inline classifier-like model (a full batch of 32 in 11.5 ms), 95% load, the machine 1.15× slow for 300 ms', () => {
  test.each([2, 14, 19])('arrivals that outran the model for a moment start no overload while the backlog is answered in time (seed %p)', async (seed) => {
    // The stretch brings the arrivals to 110% of the slow machine's capacity for 300 ms: they
    // outran the model, the queue passed the overload's cap of two batches (what a doubled run time
    // ends in time), and the overload refused 68 / 24 / 19 requests on these seeds that a greedy
    // host answered in time. The pattern of live runs of the classifier at 95% (27-28 Nov).
    const cls = { a: 0.29, b: 0.352, maxBatchSize: 32, maxLatencyMs: 100 };
    const { greedy, adaptive } = await greedyAndAdaptive(inline(cls, (at) => (at >= 500 && at < 800 ? 1.15 : 1)), 0.95, 2, 700 + seed);
    expect(greedy.shed + greedy.overSlo).toBe(0);
    expect(adaptive.shed + adaptive.overSlo).toBe(0);
  });
});

describe('10 ms + 0.1 ms/row, 150% from a cold host, with jitter and slow spells', () => {
  test.each([4, 5])('while arrivals outpace the model a backlog past the budget on the mean is refused, so nobody at its edge is answered late (seed %p)', async (seed) => {
    // Judged on the optimistic end until the overload began, 13 / 10 requests at the budget's edge
    // were admitted and answered late on these seeds (bench/overload.ts's arrivals).
    const m: SimModel = { ...FIXED_COST, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed } };
    const rate = rateForLoad(m, 1.5);
    const r = await simulate(m, { kind: 'adaptive' }, poissonArrivals(rate, Math.round(rate * 2000), 1000 + seed));
    expect(r.overSlo).toBe(0);
    expect(r.adaptive?.stats.refusedCertainMiss).toBeGreaterThanOrEqual(1);
  });

  test.each([13, 15, 23])('a cold host prices the backlog at a slowdown while arrivals outpace it, so its overload starts before the budget\'s edge and nobody is late (seed %p)', async (seed) => {
    // Judged on the mean at the model's estimate, the backlog grew to the budget's edge (about six
    // full batches) before the first certain miss, and 13 / 26 / 48 answers admitted there were
    // late on these seeds (each with its own jitter, as bench/overload.ts draws it).
    const m: SimModel = { ...FIXED_COST, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed }, jitterSeed: 4242 + seed };
    const rate = rateForLoad(m, 1.5);
    const r = await simulate(m, { kind: 'adaptive' }, poissonArrivals(rate, Math.round(rate * 1000), 1000 + seed));
    expect({ seed, late: r.overSlo }).toEqual({ seed, late: 0 });
    expect(r.adaptive?.stats.refusedCertainMiss).toBeGreaterThanOrEqual(1);
  });

  test.each([
    [64, 33.8],
    [128, 62.6],
  ])('a burst shorter than the budget is not priced so: %p requests at once, 200 more %p ms later, and a cold host refuses none that a greedy host answers in time', async (first, at) => {
    // Priced at the slowdown whenever arrivals outpaced a cold host, the second burst lost 51 / 40
    // requests that a greedy host answered in time, its busy period shorter than the 100 ms budget.
    const m: SimModel = FIXED_COST;
    const arrivals = [...new Array<number>(first).fill(0), ...new Array<number>(200).fill(at)];
    const greedy = await simulate(m, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
    const adaptive = await simulate(m, { kind: 'adaptive' }, arrivals);
    expect(greedy.answered - greedy.overSlo).toBe(arrivals.length);
    expect({ refused: adaptive.shed, late: adaptive.overSlo }).toEqual({ refused: 0, late: 0 });
  });

  test.each([1, 2, 3])('a 2× spell just after the overload began: nobody is late, and as many are answered in time as under the best queue bound (seed %p)', async (seed) => {
    // The overload starts at about 60-130 ms, long before `overloadMs` of arrivals call it
    // sustained. Priced at the model's estimate, which follows the spell a clipped step at a time,
    // and with the backlog at the budget's edge when the cold host's first certain miss started
    // it, the queue looked in time and 70 / 68 / 73 answers were late on these seeds (a 2 ms window
    // with a queue bound of 64 had none).
    const m = doubledBetween(150, 300);
    const rate = rateForLoad(FIXED_COST, 1.5);
    const arrivals = poissonArrivals(rate, Math.round(rate * 1500), 1000 + seed);
    const r = await simulate(m, { kind: 'adaptive' }, arrivals);
    const bound = await simulate(m, { kind: 'fixed', maxDelayMs: 2, maxQueueSize: 64 }, arrivals);
    expect(r.overSlo).toBe(0);
    expect(r.answered - r.overSlo).toBeGreaterThanOrEqual((bound.answered - bound.overSlo) * 0.995);
  });
});

describe('10 ms + 0.1 ms/row, a host serving at 70% for 2 s when 150% begins, and a 2× spell 100 ms later', () => {
  test.each([1, 2, 3])('the plan prices the queue at the slowdown the last batch showed and sheds who would be late (seed %p)', async (seed) => {
    // The overload started by the rate keeps a queue a doubled run time ends in time, but the
    // spell finds it longer (the onset's backlog): priced at the latency model's estimate, which
    // follows the spell a clipped step at a time, 31 / 25 / 32 answers were late on these seeds and
    // fewer answered in time than under a 2 ms window with a queue bound of 64.
    const m = doubledBetween(2100, 2250);
    const arrivals = servingThen(seed, 1.5, 1000, 1000 + seed);
    const r = await simulate(m, { kind: 'adaptive' }, arrivals);
    const bound = await simulate(m, { kind: 'fixed', maxDelayMs: 2, maxQueueSize: 64 }, arrivals);
    expect(r.adaptive?.stats.shedOverload).toBeGreaterThan(0);
    expect(r.overSlo).toBe(0);
    expect(r.answered - r.overSlo).toBeGreaterThanOrEqual(bound.answered - bound.overSlo);
  });
});

describe('1 ms + 0.5 ms/row at 120% and 150% with slow spells that double run times, 12 s, seeds 1-5', () => {
  /** Answers past the budget among the requests sent after the first second (the onset), summed over the seeds. */
  async function lateAfterOnset(load: number): Promise<number> {
    let late = 0;
    for (let seed = 1; seed <= 5; seed++) {
      const m: SimModel = { a: 1, b: 0.5, maxBatchSize: 32, maxLatencyMs: 100, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed } };
      const rate = rateForLoad(m, load);
      late += (await simulate(m, { kind: 'adaptive' }, poissonArrivals(rate, Math.round(rate * 12_000), 1000 + seed))).overSloSentFrom(1000);
    }
    return late;
  }

  test('the queue kept under overload is what keeps batches full, so a spell leaves few answers late', async () => {
    // A full batch takes 17 ms, 34 in a spell. At 150% the rows of one batch's run time fill the
    // next: one batch waits and its back ends within two doubled batches (with one and a half
    // batches waiting: 148 late). At 120% 38 rows wait (with 48: 192 late).
    expect(await lateAfterOnset(1.5)).toBeLessThanOrEqual(20);
    expect(await lateAfterOnset(1.2)).toBeLessThanOrEqual(80);
  });
});

/**
 * Adaptive and greedy on the same 6 s of Poisson arrivals (seeded `arrivalSeed`) at `load`, on
 * 10 + 0.1·n ms with 10% jitter and 2× slow spells (seeded `seed`): requests each missed (refused
 * or answered past `budgetMs`), and adaptive's counters.
 */
async function spellsAgainstGreedy(budgetMs: number, load: number, seed: number, arrivalSeed: number) {
  const m: SimModel = { ...FIXED_COST, maxLatencyMs: budgetMs, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed } };
  const rate = rateForLoad(m, load);
  const arrivals = poissonArrivals(rate, Math.round(rate * 6000), arrivalSeed);
  const missed = (r: SimResult): number => arrivals.length - r.answered + r.overSlo;
  const adaptive = await simulate(m, { kind: 'adaptive' }, arrivals);
  const greedy = await simulate(m, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
  return { adaptive: missed(adaptive), greedy: missed(greedy), stats: adaptive.adaptive?.stats };
}

describe('10 ms + 0.1 ms/row, batches of 32, 70% load with slow spells', () => {
  test.each([3, 6])('a slow spell into the backlog (seed %p): adaptive cuts no batch short and misses no more than greedy', async (seed) => {
    // A spell that doubles run times at 70% load builds a backlog of several batches; the latency
    // model lags the doubled run times, so a plan read cutting the first batch for its late head
    // as saving requests, and the cuts (31, 22, 13, 2 rows) took the throughput the backlog
    // needed: on these seeds the model missed 25 and 64 requests against greedy's 2 and 41.
    const r = await spellsAgainstGreedy(100, 0.7, seed, 1000 + seed);
    expect(r.greedy).toBeGreaterThan(0); // the spell does make a backlog past the budget
    expect(r.stats?.deadlineLimited).toBe(0);
    expect(r.adaptive).toBeLessThanOrEqual(r.greedy);
  });
});

describe('10 ms + 0.1 ms/row, batches of 32, a 50 ms budget, 30% load with slow spells', () => {
  test.each([2, 7])('after a batch that ran slow no batch is cut short (seed %p): adaptive misses at most 10 more than greedy', async (seed) => {
    // At 30% load a cut is asked for only when a spell has made the plan's head late: the latency
    // model follows the doubled run times a clipped step at a time, so the plan underprices the
    // batch a cut adds, and every arrival waits behind it. With such cuts, these seeds missed 22
    // and 25 requests against greedy's 7 and 0 (bench/spells.ts flags a cell past 1.1× + 10).
    const r = await spellsAgainstGreedy(50, 0.3, seed, 7000 + seed);
    expect(r.adaptive).toBeLessThanOrEqual(r.greedy + 10);
  });
});
