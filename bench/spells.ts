/**
 * Scenario: where does the adaptive policy miss more requests than greedy? A grid below and near
 * capacity (30–95% load) of three cost shapes (`a + b·rows` ms: a small, a large and a middling
 * fixed cost, batches of 32), three budgets (50, 100, 200 ms) and the model with and without slow
 * spells (a batch that starts in one costs twice as much: 150 ms every 2 s on average, as this VM
 * has them), every setting on the same seeded arrivals, through the real host and policies on a
 * simulated clock (test/adaptive/simulation.ts). Greedy is `maxDelayMs: 0` with the default queue.
 *
 * The measure: requests missed (refused, or answered past the budget) by each, summed over the
 * seeds, and the median p99. A cell is flagged when adaptive misses more than 1.1× greedy's plus
 * 10, or its p99 is over 1.1× greedy's plus 1 ms. The target, a policy that refuses only what it
 * cannot answer in time, is no flagged cell. Below capacity a greedy host sheds nothing, so every
 * refusal adaptive makes there must save a late answer to pay for itself; a slow spell is where
 * that fails (the latency model lags the doubled run times; see docs/adaptive.md).
 *
 *   npx ts-node bench/spells.ts --quick   # 3 seeds × 4 s per cell
 *   npx ts-node bench/spells.ts --full    # 10 seeds × 12 s per cell
 */
import { fmt, main, median, pick, Progress, report, table, writeResults, type TargetResult } from './harness';
import { poissonArrivals, rateForLoad, simulate, type SimModel } from '../test/adaptive/simulation';

const SHAPES = [
  { a: 1, b: 0.5 },
  { a: 10, b: 0.1 },
  { a: 5, b: 0.3 },
] as const;
const BUDGETS = [50, 100, 200] as const;
const LOADS = [0.3, 0.5, 0.7, 0.85, 0.95] as const;
const SPELLS = { everyMs: 2000, lengthMs: 150, factor: 2 } as const;

/** One policy's figures in one cell, over its seeds. */
interface Side {
  readonly missed: number;
  readonly p99: number;
}

/** A cell is flagged when adaptive misses more, or answers slower at p99, by more than these. */
const flagged = (adaptive: Side, greedy: Side): boolean => adaptive.missed > 1.1 * greedy.missed + 10 || adaptive.p99 > 1.1 * greedy.p99 + 1;

main(async (args) => {
  const seeds = args.reps ?? pick(args, 3, 10);
  const seconds = pick(args, 4, 12);
  const progress = new Progress('spells', args.progress);
  const rows: string[][] = [];
  const cells: Array<{ model: string; budgetMs: number; spells: boolean; load: number; sent: number; adaptive: Side; greedy: Side; flagged: boolean }> = [];
  for (const { a, b } of SHAPES) {
    for (const budget of BUDGETS) {
      // A budget that a full batch nearly fills leaves no room to batch: not a setting anyone runs.
      if (a + 32 * b > 0.6 * budget) continue;
      for (const spells of [false, true]) {
        const model = `${a} + ${b}·n ms`;
        const row = [model, `${budget} ms`, spells ? '2× spells' : 'none'];
        for (const load of LOADS) {
          let sent = 0;
          const missed = { adaptive: 0, greedy: 0 };
          const p99s = { adaptive: [] as number[], greedy: [] as number[] };
          for (let seed = 1; seed <= seeds; seed++) {
            const m: SimModel = { a, b, maxBatchSize: 32, maxLatencyMs: budget, jitterCv: 0.1, jitterSeed: 4242 + seed, ...(spells ? { spells: { ...SPELLS, seed } } : {}) };
            const rate = rateForLoad(m, load);
            const arrivals = poissonArrivals(rate, Math.round(rate * seconds * 1000), 7000 + seed);
            sent += arrivals.length;
            for (const side of ['adaptive', 'greedy'] as const) {
              const r = await simulate(m, side === 'adaptive' ? { kind: 'adaptive' } : { kind: 'fixed', maxDelayMs: 0 }, arrivals);
              missed[side] += r.shed + r.overSlo;
              p99s[side].push(r.p99);
            }
          }
          const adaptive = { missed: missed.adaptive, p99: median(p99s.adaptive) };
          const greedy = { missed: missed.greedy, p99: median(p99s.greedy) };
          const flag = flagged(adaptive, greedy);
          cells.push({ model, budgetMs: budget, spells, load, sent, adaptive, greedy, flagged: flag });
          row.push(`${fmt(adaptive.missed, 0)} / ${fmt(greedy.missed, 0)}, p99 ${fmt(adaptive.p99, 1)} / ${fmt(greedy.p99, 1)}${flag ? ' **!**' : ''}`);
          progress.update(`${model}, ${budget} ms, ${spells ? 'spells' : 'no spells'}, ${Math.round(load * 100)}%`);
        }
        rows.push(row);
      }
    }
  }
  progress.done();
  const bad = cells.filter((c) => c.flagged);
  const targets: TargetResult[] = [{ name: 'cells where adaptive misses more than greedy (× 1.1 + 10) or its p99 is over 1.1× greedy\'s (+ 1 ms)', value: bad.length, target: '0', pass: bad.length === 0 }];
  report(
    `Adaptive against greedy below and near capacity, with and without slow spells (simulated clock; ${seeds} seeds × ${seconds} s per cell)`,
    [
      {
        heading: 'Requests missed (refused or past the budget), adaptive / greedy, summed over the seeds; median p99 ms (**!**: adaptive worse)',
        text: table(['model', 'budget', 'spells', ...LOADS.map((l) => `${Math.round(l * 100)}%`)], rows),
      },
    ],
    targets,
  );
  writeResults('spells', args, { seeds, seconds, shapes: SHAPES, budgets: BUDGETS, loads: LOADS, spells: SPELLS, cells }, targets);
});
