/**
 * Scenario: the adaptive policy under overload, against fixed windows. Poisson arrivals at 120 %
 * and 150 % of the model's full-batch capacity, on models whose cost is exact (`a + b·rows` ms,
 * with lognormal jitter and slow spells: a batch that starts in a spell costs twice as much), run
 * through the real host and policies on a simulated clock (test/adaptive/simulation.ts), every
 * setting on the same arrivals, spells and jitter, each seed its own (until 28 Nov every seed drew
 * the same jitter sequence, so every cold start read the model from the same first six factors).
 * Settings: greedy with `maxDelayMs` ∈ {0, 2, 5, 10}, each with the default queue (unbounded) and
 * with every `maxQueueSize` of a sweep (the best bound per window is reported), and `policy:
 * 'adaptive'` with `maxLatencyMs` the budget. No setting is told more.
 *
 * The measure: goodput (answers within the budget, per second) as a share of the model's
 * capacity, and how long a refused request waited to learn it (p50/p99); and, for adaptive and the
 * best bound, the answers in time among the requests sent in the first second (where the overload
 * begins and adaptive's queue first grows to the budget) and among those sent after it; and,
 * paired beside the medians, the answers in time summed over the seeds against the bound with the
 * most of them (as bench/overload-profile.ts judges); and the best bound's twins (its queue bound
 * with a window 1 ms either side, outside the sweep), judged as adaptive is: what the maximum of 28
 * settings picked on the same seeds reads for a setting as good as the best. In --full
 * the best bound, picked on these seeds, is also judged against adaptive on 100 fresh seeds: picked
 * as the best of 28 settings, its figure on its own seeds includes their luck; and the same on a
 * host already serving when the overload begins (2 s at 70% load first); and the bounds picked
 * are played below capacity (70% and 95% load), where a bound set for a service also runs.
 * Targets (issue 32):
 * adaptive's goodput ≥ 90 % of capacity, ≥ 1.5× the best window with the default queue, ≥ 1.0× the
 * best window with its best bound; a refusal within 1 ms of arriving.
 *
 * The same on the real classifier, live: bench/overload-live.ts.
 *
 *   npx ts-node bench/overload.ts --quick
 *   OVERLOAD_SECONDS=36 npx ts-node bench/overload.ts --full   # 5 seeds of 36 s
 */
import { fmt, main, mean, median, percentile, pick, Progress, report, table, writeResults, type TargetResult } from './harness';
import { poissonArrivals, rateForLoad, simulate, type SimModel, type SimPolicy, type SimResult } from '../test/adaptive/simulation';

const BUDGET_MS = 100;
const WINDOWS = [0, 2, 5, 10] as const;
const BOUNDS = [32, 64, 96, 128, 192, 256, 384] as const;
const LOADS = [1.2, 1.5] as const;

interface Model extends SimModel {
  readonly name: string;
}
const spells = { everyMs: 2_000, lengthMs: 150, factor: 2 };
const MODELS: readonly Model[] = [
  { name: '1 ms + 0.5 ms/row (classifier-like)', a: 1, b: 0.5, maxBatchSize: 32, maxLatencyMs: BUDGET_MS, jitterCv: 0.1, spells },
  { name: '10 ms + 0.1 ms/row (fixed cost)', a: 10, b: 0.1, maxBatchSize: 32, maxLatencyMs: BUDGET_MS, jitterCv: 0.1, spells },
];

interface Cell {
  /** Answers within the budget per second, over capacity. */
  readonly goodput: number;
  readonly refusedP50: number;
  readonly refusedP99: number;
  /** Share of the refusals that came within 1 ms of arrival. */
  readonly refusedFast: number;
  readonly late: number;
  readonly refused: number;
  /** Answers within the budget among the requests sent in the first second (the onset), and after it. */
  readonly onTimeOnset: number;
  readonly onTimeAfter: number;
}

/** Where an overload's onset ends for the split above: the queue reaches the budget within it at 120% and 150%. */
const ONSET_MS = 1000;

/**
 * The host already serving when the overload begins (--full, fresh seeds): this long at
 * `SERVING_LOAD` first. A service's overload starts on a running host whose policy has learned
 * the model, not on a fresh one; on a model with a large fixed cost the host is rarely idle at 70%
 * either, which the rate test reads differently (docs/adaptive.md).
 */
const SERVING_MS = 2000;
const SERVING_LOAD = 0.7;

/**
 * Loads below capacity at which --full also plays the bounds picked above: a bound is set once for
 * a service, so what it costs when the load is not an overload is part of the choice; adaptive and
 * window 0 with the default queue beside it. With the same jitter and spells (the spells take
 * 3.75% of capacity, so 95% is at the edge of what the model serves), and at 95% on the exact
 * model (no jitter, no spells), where nobody need miss.
 */
const BELOW = [
  { load: 0.7, exact: false },
  { load: 0.95, exact: false },
  { load: 0.95, exact: true },
] as const;
const BELOW_SEEDS = 10;

const fixedName = (d: number, bound?: number): string => `window ${d}${bound === undefined ? '' : `, maxQueueSize ${bound}`}`;

/** One run's figures over the requests sent from some time on. */
interface Counted {
  /** Answers within the budget per millisecond of the requests' span, over the model's full-batch capacity. */
  readonly goodput: number;
  /** Answers within the budget. */
  readonly onTime: number;
  /** Answers past the budget. */
  readonly late: number;
}

/** A run's figures over the requests sent from `from` on. */
function goodputFrom(m: Model, r: SimResult, arrivals: readonly number[], from: number): Counted {
  const capacity = m.maxBatchSize / (m.a + m.b * m.maxBatchSize);
  const onTime = r.onTimeSentFrom(from);
  return { goodput: onTime / ((arrivals.at(-1) as number) - from) / capacity, onTime, late: r.overSloSentFrom(from) };
}

/** A seed's arrivals at `rate` (requests per ms) for `seconds`: every setting of a cell, its twins and its fresh seeds draw them so. */
function overloadArrivals(rate: number, seconds: number, seed: number): number[] {
  return poissonArrivals(rate, Math.round(rate * seconds * 1000), 1000 + seed);
}

/** One setting on one seed's arrivals (its spells and its run times' jitter seeded alike). */
function run(m: Model, seed: number, policy: SimPolicy, arrivals: readonly number[]): Promise<SimResult> {
  return simulate({ ...m, spells: { ...spells, seed }, jitterSeed: 4242 + seed }, policy, arrivals);
}

main(async (args) => {
  const seeds = args.reps ?? pick(args, 2, 5);
  // OVERLOAD_SECONDS lengthens the runs: the onset of an overload (the queue growing to the budget
  // before adaptive caps it) happens once per run, so longer runs weigh the steady state more.
  const seconds = process.env.OVERLOAD_SECONDS === undefined ? pick(args, 6, 12) : Number(process.env.OVERLOAD_SECONDS);
  if (!(seconds > 0)) throw new RangeError(`OVERLOAD_SECONDS: expected a number of seconds > 0, got ${String(process.env.OVERLOAD_SECONDS)}`);
  const progress = new Progress('overload', args.progress);
  const settings: Array<{ name: string; policy: SimPolicy }> = [{ name: 'adaptive', policy: { kind: 'adaptive' } }];
  for (const d of WINDOWS) {
    settings.push({ name: fixedName(d), policy: { kind: 'fixed', maxDelayMs: d } });
    for (const q of BOUNDS) settings.push({ name: fixedName(d, q), policy: { kind: 'fixed', maxDelayMs: d, maxQueueSize: q } });
  }
  // The best bound is the best of 28 settings on these seeds' arrivals, so its figure carries the
  // luck of those arrivals; a user tunes a bound on one day's traffic and runs it on the next. So
  // in --full the bound picked here is also judged against adaptive on fresh seeds.
  // A hundred: adaptive and the best bound differ by a few answers in 28,000 a seed, and the phase
  // of their batches against the slow spells moves a seed's difference by tens; over 100 seeds the
  // mean difference is known to about ±0.015% (95%).
  const fresh = pick(args, 0, 100);
  const out: Record<string, Record<string, Cell[]>> = {};
  const cellOf: Record<string, { m: Model; load: number }> = {};
  const total = MODELS.length * LOADS.length * seeds * settings.length;
  let done = 0;
  for (const m of MODELS) {
    for (const load of LOADS) {
      const key = `${m.name} @ ${Math.round(load * 100)}%`;
      const cells: Record<string, Cell[]> = (out[key] = {});
      cellOf[key] = { m, load };
      const rate = rateForLoad(m, load);
      for (let seed = 1; seed <= seeds; seed++) {
        const arrivals = overloadArrivals(rate, seconds, seed);
        for (const s of settings) {
          const r = await run(m, seed, s.policy, arrivals);
          const onTime = r.answered - r.overSlo;
          const refusals = [...r.refusals].sort((x, y) => x - y);
          (cells[s.name] ??= []).push({
            goodput: goodputFrom(m, r, arrivals, 0).goodput,
            refusedP50: refusals.length === 0 ? 0 : percentile(refusals, 50),
            refusedP99: refusals.length === 0 ? 0 : percentile(refusals, 99),
            refusedFast: refusals.length === 0 ? 1 : refusals.filter((t) => t <= 1).length / refusals.length,
            late: r.overSlo,
            refused: r.shed,
            onTimeOnset: onTime - r.onTimeSentFrom(ONSET_MS),
            onTimeAfter: r.onTimeSentFrom(ONSET_MS),
          });
          progress.update(`${++done}/${total} ${key}: ${s.name}`);
        }
      }
    }
  }
  progress.done();

  const med = (cells: Cell[] | undefined, k: keyof Cell): number => median((cells ?? []).map((c) => c[k]));
  const sections: Array<{ heading: string; text: string }> = [];
  const targets: TargetResult[] = [];
  const summary: Record<string, unknown> = {};
  /** Per model, the bounds picked as best at each load, by name. */
  const picked: Record<string, Map<string, SimPolicy>> = {};
  for (const [key, cells] of Object.entries(out)) {
    const rows: string[][] = [];
    const row = (name: string): string[] => {
      const c = cells[name];
      return [name, `${fmt(100 * med(c, 'goodput'), 1)}%`, fmt(med(c, 'refusedP50'), 2), fmt(med(c, 'refusedP99'), 2), `${fmt(100 * med(c, 'refusedFast'), 1)}%`, fmt(med(c, 'late'), 0), fmt(med(c, 'refused'), 0)];
    };
    rows.push(row('adaptive'));
    let bestDefault = { name: '', goodput: -1 };
    const none = { name: '', goodput: -1, policy: { kind: 'fixed', maxDelayMs: 0 } as SimPolicy };
    let bestBound = none;
    for (const d of WINDOWS) {
      const g = med(cells[fixedName(d)], 'goodput');
      if (g > bestDefault.goodput) bestDefault = { name: fixedName(d), goodput: g };
      rows.push(row(fixedName(d)));
      let own = none;
      for (const q of BOUNDS) {
        const gq = med(cells[fixedName(d, q)], 'goodput');
        if (gq > own.goodput) own = { name: fixedName(d, q), goodput: gq, policy: { kind: 'fixed', maxDelayMs: d, maxQueueSize: q } };
      }
      rows.push(row(own.name));
      if (own.goodput > bestBound.goodput) bestBound = own;
    }
    const adaptive = med(cells.adaptive, 'goodput');
    // Paired beside the medians: answers in time summed over the seeds (every setting on the same
    // arrivals), against the bound with the most of them, and the median of per-seed ratios to it.
    const inTime = (c: Cell): number => c.onTimeOnset + c.onTimeAfter;
    const sum = (name: string): number => (cells[name] ?? []).reduce((n, c) => n + inTime(c), 0);
    const bySum = WINDOWS.flatMap((d) => BOUNDS.map((q) => fixedName(d, q))).reduce((x, y) => (sum(y) > sum(x) ? y : x));
    const pairedRatios = (cells.adaptive ?? []).map((c, i) => inTime(c) / inTime((cells[bySum] as Cell[])[i] as Cell));
    const paired = { bound: bySum, ratio: sum('adaptive') / sum(bySum), medianRatio: median(pairedRatios), wins: pairedRatios.filter((r) => r >= 1).length };
    // The onset against the rest: the same arrivals, so the best bound's own counts are the yardstick.
    const split = (name: string): string[] => [name, fmt(med(cells[name], 'onTimeOnset'), 0), fmt(med(cells[name], 'onTimeAfter'), 0)];
    const onset = [split('adaptive'), split(bestBound.name)];
    const ratio = (k: 'onTimeOnset' | 'onTimeAfter'): number => med(cells.adaptive, k) / med(cells[bestBound.name], k);
    onset.push(['adaptive / best bound', fmt(ratio('onTimeOnset'), 3), fmt(ratio('onTimeAfter'), 3)]);
    const refusalP99 = med(cells.adaptive, 'refusedP99');
    const fast = med(cells.adaptive, 'refusedFast');
    sections.push({ heading: key, text: table(['setting (best bound per window)', 'goodput (of capacity)', 'refusal p50 ms', 'refusal p99 ms', 'refused within 1 ms', 'late', 'refused'], rows) });
    sections.push({ heading: `${key}: answered in time, sent in the first ${ONSET_MS / 1000} s (the onset) and after`, text: table(['setting', 'onset', 'after'], onset) });
    sections.push({
      heading: `${key}: paired, answers in time summed over the ${seeds} seeds against the bound with the most`,
      text: table(['bound', 'adaptive / bound, sums', 'median of per-seed ratios', 'seeds adaptive wins'], [[bySum, fmt(paired.ratio, 4), fmt(paired.medianRatio, 4), `${paired.wins} of ${seeds}`]]),
    });
    // The pick's luck: settings outside the sweep next to the best bound, judged as adaptive is.
    const { m: cm, load: cload } = cellOf[key] as { m: Model; load: number };
    const twinRows = await twinsOf(cm, cload, bestBound.policy, seeds, seconds, bestBound.goodput);
    twinRows.push({ name: 'adaptive', ratio: adaptive / bestBound.goodput });
    sections.push({
      heading: `${key}: the pick's luck, settings outside the sweep beside the best bound (${bestBound.name}), on the same ${seeds} seeds`,
      text: table(['setting', 'goodput / best bound (ratio of medians, as the target)'], twinRows.map((t) => [t.name, fmt(t.ratio, 4)])),
    });
    type Judged = { medianRatio: number; sumRatio: number; meanDiff: number; ci95: number; wins: number; late: number; boundLate: number };
    let judged: { seeds: string; fresh: Judged; serving: Judged } | undefined;
    if (fresh > 0) {
      const { m, load } = cellOf[key] as { m: Model; load: number };
      const rate = rateForLoad(m, load);
      const serving = rateForLoad(m, SERVING_LOAD);
      const runs = { fresh: [] as Array<{ a: Counted; b: Counted }>, serving: [] as Array<{ a: Counted; b: Counted }> };
      for (let seed = seeds + 1; seed <= seeds + fresh; seed++) {
        const arrivals = overloadArrivals(rate, seconds, seed);
        const counted = async (policy: SimPolicy, all: readonly number[], from: number): Promise<Counted> => goodputFrom(m, await run(m, seed, policy, all), all, from);
        runs.fresh.push({ a: await counted({ kind: 'adaptive' }, arrivals, 0), b: await counted(bestBound.policy, arrivals, 0) });
        // The same overload after SERVING_MS of SERVING_LOAD; counted from its start.
        const before = poissonArrivals(serving, Math.round(serving * SERVING_MS), 500 + seed).filter((t) => t < SERVING_MS);
        const running = [...before, ...arrivals.map((t) => t + SERVING_MS)];
        runs.serving.push({ a: await counted({ kind: 'adaptive' }, running, SERVING_MS), b: await counted(bestBound.policy, running, SERVING_MS) });
        progress.update(`${key}: fresh seed ${seed}`);
      }
      const judge = (pairs: Array<{ a: Counted; b: Counted }>): Judged => {
        const ratios = pairs.map(({ a, b }) => a.goodput / b.goodput);
        // Paired per seed: the mean difference in answers in time, with a normal 95% interval.
        const diffs = pairs.map(({ a, b }) => a.onTime - b.onTime);
        const meanDiff = mean(diffs);
        const sd = Math.sqrt(diffs.reduce((x, d) => x + (d - meanDiff) ** 2, 0) / Math.max(1, diffs.length - 1));
        const sumA = pairs.reduce((n, p) => n + p.a.onTime, 0);
        const sumB = pairs.reduce((n, p) => n + p.b.onTime, 0);
        return {
          medianRatio: median(ratios),
          sumRatio: sumA / sumB,
          meanDiff,
          ci95: (1.96 * sd) / Math.sqrt(diffs.length),
          wins: ratios.filter((r) => r >= 1).length,
          late: pairs.reduce((n, p) => n + p.a.late, 0),
          boundLate: pairs.reduce((n, p) => n + p.b.late, 0),
        };
      };
      const both = { fresh: judge(runs.fresh), serving: judge(runs.serving) };
      judged = { seeds: `${seeds + 1}-${seeds + fresh}`, ...both };
      sections.push({
        heading: `${key}: the best bound judged on fresh arrivals (seeds ${judged.seeds}), from a fresh host and from one already serving (${SERVING_MS / 1000} s at ${SERVING_LOAD * 100}% first)`,
        text: table(
          ['host', 'bound picked above', 'adaptive / bound, median of per-seed ratios', 'adaptive / bound, sums', 'adaptive − bound, answers in time per seed (mean ± 95%)', 'seeds adaptive wins', 'late answers, adaptive / bound (sum)'],
          (['fresh', 'serving'] as const).map((k) => {
            const j = both[k];
            return [k === 'fresh' ? 'fresh' : 'already serving', bestBound.name, fmt(j.medianRatio, 4), fmt(j.sumRatio, 4), `${fmt(j.meanDiff, 1)} ± ${fmt(j.ci95, 1)}`, `${j.wins} of ${fresh}`, `${j.late} / ${j.boundLate}`];
          }),
        ),
      });
    }
    (picked[(cellOf[key] as { m: Model }).m.name] ??= new Map()).set(bestBound.name, bestBound.policy);
    summary[key] = { adaptive, bestDefault, bestBound: { name: bestBound.name, goodput: bestBound.goodput }, paired, twins: twinRows, refusalP99, fast, onset: ratio('onTimeOnset'), after: ratio('onTimeAfter'), judged };
    targets.push(
      { name: `${key}: adaptive goodput / capacity`, value: adaptive, target: '>= 0.9', pass: adaptive >= 0.9 },
      { name: `${key}: adaptive / best window, default queue (${bestDefault.name})`, value: adaptive / bestDefault.goodput, target: '>= 1.5', pass: adaptive / bestDefault.goodput >= 1.5 },
      { name: `${key}: adaptive / best window with its best bound (${bestBound.name})`, value: adaptive / bestBound.goodput, target: '>= 1.0', pass: adaptive / bestBound.goodput >= 1.0 },
      { name: `${key}: adaptive's refusals within 1 ms of arrival (share)`, value: fast, target: '>= 0.99 (p99 <= 1 ms)', pass: refusalP99 <= 1 },
    );
  }
  const below = fresh > 0 ? await belowCapacity(picked, seconds, progress) : undefined;
  if (below !== undefined) sections.push(...below.sections);
  report(`Overload: goodput within ${BUDGET_MS} ms and time to refusal (simulated clock, real host and policies, medians of ${seeds} seeds × ${seconds} s)`, sections, targets);
  writeResults('overload', args, { budgetMs: BUDGET_MS, seconds, seeds, windows: WINDOWS, bounds: BOUNDS, loads: LOADS, summary, cells: out, belowCapacity: below?.data }, targets);
});

/**
 * The best bound's twins: its queue bound with a window 1 ms shorter and 1 ms longer (not in the
 * sweep), on the same seeds, as goodput medians over the best bound's. A twin is as good as the
 * best bound by construction (the same queue, a wait that at 120-150% load rarely runs out), but
 * the best was picked as the maximum of 28 settings on these very seeds, where the phase of the
 * batches against the slow spells alone moves a run's count by tens of answers; so a twin reads
 * below 1.0 by the pick's luck, and adaptive is judged against the same maximum. (Where a window
 * rarely runs out under overload, as on the fixed-cost model, a twin's batches run nearly in step
 * with the best's and share its luck: there the twins bound the luck from below.)
 */
async function twinsOf(m: Model, load: number, best: SimPolicy, seeds: number, seconds: number, bestGoodput: number): Promise<Array<{ name: string; ratio: number }>> {
  if (best.kind !== 'fixed') return [];
  const rate = rateForLoad(m, load);
  const out: Array<{ name: string; ratio: number }> = [];
  for (const d of [best.maxDelayMs - 1, best.maxDelayMs + 1]) {
    if (d < 0) continue;
    const policy: SimPolicy = { kind: 'fixed', maxDelayMs: d, ...(best.maxQueueSize === undefined ? {} : { maxQueueSize: best.maxQueueSize }) };
    const goodputs: number[] = [];
    for (let seed = 1; seed <= seeds; seed++) {
      const arrivals = overloadArrivals(rate, seconds, seed);
      goodputs.push(goodputFrom(m, await run(m, seed, policy, arrivals), arrivals, 0).goodput);
    }
    out.push({ name: fixedName(d, best.maxQueueSize), ratio: median(goodputs) / bestGoodput });
  }
  return out;
}

/** One setting's misses at one load below capacity, summed over the seeds. */
interface Below {
  readonly load: number;
  /** No jitter and no spells. */
  readonly exact: boolean;
  readonly setting: string;
  /** Refused plus late, over the requests sent. */
  readonly missed: number;
  readonly refused: number;
  readonly late: number;
}

/**
 * Each model's bounds picked above, with adaptive and window 0 (default queue), at the loads below
 * capacity: requests missed (refused, or answered past the budget) as a share of those sent, over
 * `BELOW_SEEDS` seeds of `seconds`.
 */
async function belowCapacity(picked: Record<string, Map<string, SimPolicy>>, seconds: number, progress: Progress): Promise<{ sections: Array<{ heading: string; text: string }>; data: Record<string, Below[]> }> {
  const sections: Array<{ heading: string; text: string }> = [];
  const data: Record<string, Below[]> = {};
  for (const m of MODELS) {
    const settings: Array<[string, SimPolicy]> = [['adaptive', { kind: 'adaptive' }], ...(picked[m.name] ?? []), [fixedName(0), { kind: 'fixed', maxDelayMs: 0 }]];
    const rows: string[][] = [];
    for (const { load, exact } of BELOW) {
      const rate = rateForLoad(m, load);
      const label = `${Math.round(load * 100)}%${exact ? ', exact model' : ''}`;
      for (const [name, policy] of settings) {
        let sent = 0;
        let refused = 0;
        let late = 0;
        for (let seed = 1; seed <= BELOW_SEEDS; seed++) {
          const arrivals = poissonArrivals(rate, Math.round(rate * seconds * 1000), 3000 + seed);
          const r = exact ? await simulate({ ...m, jitterCv: 0, spells: undefined }, policy, arrivals) : await run(m, seed, policy, arrivals);
          sent += arrivals.length;
          refused += r.shed;
          late += r.overSlo;
        }
        const missed = (refused + late) / sent;
        rows.push([label, name, `${fmt(100 * missed, 3)}%`, fmt(refused, 0), fmt(late, 0)]);
        (data[m.name] ??= []).push({ load, exact, setting: name, missed, refused, late });
        progress.update(`${m.name} @ ${label}: ${name}`);
      }
    }
    sections.push({
      heading: `${m.name}: the bounds picked above, below capacity (${BELOW_SEEDS} seeds × ${seconds} s)`,
      text: table(['load', 'setting', 'missed (refused + late)', 'refused', 'late'], rows),
    });
  }
  return { sections, data };
}
