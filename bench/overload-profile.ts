/**
 * Scenario: one setting across a service's loads. bench/overload.ts judges each overload on its
 * own, from a cold host, against the best queue bound for that very cell; a service sets one
 * policy and meets every load in turn. Here the load steps through 70% → 120% → 70% → 150% → 95%
 * of the model's full-batch capacity (3, 2, 3, 2 and 3 s; Poisson arrivals within each step), on
 * the two exact-cost models of bench/overload.ts with 10% jitter and 2× slow spells, a 100 ms
 * budget, every setting on the same arrivals (the real host and policies on a simulated clock,
 * test/adaptive/simulation.ts). Settings: `policy: 'adaptive'`, and greedy windows of 0/2/5/10 ms
 * with the default queue and with each `maxQueueSize` of a sweep; the best of them is picked on
 * these very arrivals.
 *
 * The measure: answers within the budget summed over the seeds, adaptive against the setting with
 * the most (what a service sees over all its traffic; every setting on the same arrivals, so the
 * sums are paired), beside the median of the per-seed ratios to that setting and the seeds
 * adaptive wins; and where the difference lies, step by step (by send time): answers in time,
 * refused, late. The target is issue 32's "≥ 1.0× the best fixed window with its best queue
 * bound", read over the whole profile. (Until 27 Nov the measure was the ratio of the two medians
 * over the seeds, unpaired: a seed's count moves with its arrivals by more than the settings
 * differ, and 5 seeds read 1.0013 / 1.0008× where 15 read 0.9951 / 0.9987×, with the sums at
 * 0.9997 / 1.0001×.)
 *
 *   npx ts-node bench/overload-profile.ts --quick   # 2 seeds
 *   npx ts-node bench/overload-profile.ts --full    # 5 seeds
 */
import { fmt, main, median, pick, Progress, report, table, writeResults, type TargetResult } from './harness';
import { poissonArrivals, rateForLoad, simulate, type SimModel, type SimPolicy } from '../test/adaptive/simulation';

const BUDGET_MS = 100;
/** The load steps: share of capacity, seconds. */
const PROFILE = [
  [0.7, 3],
  [1.2, 2],
  [0.7, 3],
  [1.5, 2],
  [0.95, 3],
] as const;
const WINDOWS = [0, 2, 5, 10] as const;
const BOUNDS = [undefined, 32, 48, 64, 96, 128, 192, 256] as const;
const MODELS = [
  { name: '1 ms + 0.5 ms/row (classifier-like)', a: 1, b: 0.5 },
  { name: '10 ms + 0.1 ms/row (fixed cost)', a: 10, b: 0.1 },
] as const;

/** Per step of the profile, by send time: answered in time, refused, answered late. */
interface Steps {
  readonly onTime: number[];
  readonly refused: number[];
  readonly late: number[];
}

/** The profile's arrivals for one seed: each step's own Poisson stream, cut at the step's end. */
function profileArrivals(m: SimModel, seed: number): number[] {
  const out: number[] = [];
  let offset = 0;
  PROFILE.forEach(([load, seconds], k) => {
    const rate = rateForLoad(m, load);
    const ms = seconds * 1000;
    // 20% more than the mean count, so the stream outlasts the step.
    for (const t of poissonArrivals(rate, Math.round(rate * ms * 1.2), 100 * seed + k)) {
      if (t >= ms) break;
      out.push(offset + t);
    }
    offset += ms;
  });
  return out;
}

/** The step each 1 s bin of send time falls in (the steps are whole seconds long). */
const STEP_OF_SECOND: number[] = PROFILE.flatMap(([, seconds], k) => Array.from({ length: seconds }, () => k));

main(async (args) => {
  const seeds = args.reps ?? pick(args, 2, 5);
  const progress = new Progress('overload-profile', args.progress);
  const settings: Array<{ name: string; policy: SimPolicy }> = [{ name: 'adaptive', policy: { kind: 'adaptive' } }];
  for (const d of WINDOWS) {
    for (const q of BOUNDS) settings.push({ name: q === undefined ? `window ${d}` : `window ${d}, maxQueueSize ${q}`, policy: q === undefined ? { kind: 'fixed', maxDelayMs: d } : { kind: 'fixed', maxDelayMs: d, maxQueueSize: q } });
  }
  const sections: Array<{ heading: string; text: string }> = [];
  const targets: TargetResult[] = [];
  const summary: Record<string, unknown> = {};
  let done = 0;
  for (const { name, a, b } of MODELS) {
    const runs = Array.from({ length: seeds }, (_, i) => {
      const m: SimModel = { a, b, maxBatchSize: 32, maxLatencyMs: BUDGET_MS, jitterCv: 0.1, spells: { everyMs: 2000, lengthMs: 150, factor: 2, seed: i + 1 }, jitterSeed: 4242 + i + 1 };
      return { m, arrivals: profileArrivals(m, i + 1) };
    });
    const results: Array<{ name: string; onTime: number; perSeed: number[]; steps: Steps }> = [];
    for (const s of settings) {
      const onTime: number[] = [];
      const steps: Steps = { onTime: PROFILE.map(() => 0), refused: PROFILE.map(() => 0), late: PROFILE.map(() => 0) };
      for (const { m, arrivals } of runs) {
        const r = await simulate(m, s.policy, arrivals);
        onTime.push(r.answered - r.overSlo);
        const t = r.timeline(1000);
        for (let k = 0; k < t.onTime.length; k++) {
          const step = STEP_OF_SECOND[Math.min(k, STEP_OF_SECOND.length - 1)] as number;
          (steps.onTime[step] as number) += t.onTime[k] as number;
          (steps.refused[step] as number) += t.refused[k] as number;
          (steps.late[step] as number) += t.late[k] as number;
        }
        progress.update(`${++done}/${MODELS.length * settings.length * seeds} ${name}: ${s.name}`);
      }
      results.push({ name: s.name, onTime: onTime.reduce((x, y) => x + y, 0), perSeed: onTime, steps });
    }
    const adaptive = results[0] as (typeof results)[number];
    const best = results.slice(1).reduce((x, y) => (y.onTime > x.onTime ? y : x));
    const ratio = adaptive.onTime / best.onTime;
    const perSeed = adaptive.perSeed.map((n, i) => n / (best.perSeed[i] as number));
    const wins = perSeed.filter((r) => r >= 1).length;
    sections.push({
      heading: `${name}: answers in time over the profile and step by step, summed over ${seeds} seeds (adaptive / ${best.name})`,
      text: table(
        ['step', 'in time', 'refused', 'late'],
        [
          ['whole profile (sum)', `${fmt(adaptive.onTime, 0)} / ${fmt(best.onTime, 0)} (${fmt(ratio, 4)}×)`, '', ''],
          ['per seed (median ratio, seeds adaptive wins)', `${fmt(median(perSeed), 4)}× (${wins} of ${seeds})`, '', ''],
          ...PROFILE.map(([load, seconds], k) => [
            `${Math.round(load * 100)}% for ${seconds} s`,
            `${fmt(adaptive.steps.onTime[k] as number, 0)} / ${fmt(best.steps.onTime[k] as number, 0)}`,
            `${fmt(adaptive.steps.refused[k] as number, 0)} / ${fmt(best.steps.refused[k] as number, 0)}`,
            `${fmt(adaptive.steps.late[k] as number, 0)} / ${fmt(best.steps.late[k] as number, 0)}`,
          ]),
        ],
      ),
    });
    summary[name] = { adaptive: adaptive.onTime, best: { name: best.name, onTime: best.onTime }, ratio, perSeedMedianRatio: median(perSeed), wins, steps: { adaptive: adaptive.steps, best: best.steps } };
    targets.push({ name: `${name}: adaptive / the best setting over the profile (${best.name}), answers in time`, value: ratio, target: '>= 1.0', pass: ratio >= 1 });
  }
  progress.done();
  report(`One setting across loads: ${PROFILE.map(([l, s]) => `${Math.round(l * 100)}% ${s} s`).join(' → ')} (simulated clock, real host and policies, ${BUDGET_MS} ms budget)`, sections, targets);
  writeResults('overload-profile', args, { budgetMs: BUDGET_MS, profile: PROFILE, seeds, windows: WINDOWS, bounds: BOUNDS.map((q) => q ?? null), summary }, targets);
});
