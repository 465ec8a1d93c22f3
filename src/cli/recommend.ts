import { poissonArrivals, simulate, type SimModel, type SimPolicy } from '../engine/simulate';

/** The measured latency of one batch size. */
export interface BatchTiming {
  /** Rows in the batch. */
  readonly batchSize: number;
  /** Timed runs (after the warm-up). */
  readonly runs: number;
  /** Median latency of one model call, in milliseconds. */
  readonly medianMs: number;
}

/** One setting's predicted latency at one load. */
export interface Prediction {
  /** The load, as a fraction of the model's throughput in full batches. */
  readonly load: number;
  readonly p50: number;
  readonly p99: number;
  /** Answers slower than the latency budget (0 without one). */
  readonly overBudget: number;
  /** Requests the setting refused (the adaptive policy sheds what cannot meet the budget). */
  readonly shed: number;
}

/** A candidate setting and its predictions at every load. */
export interface Candidate {
  /** How the table names it: `maxDelayMs 0`, `adaptive`. */
  readonly label: string;
  readonly policy: SimPolicy;
  readonly predictions: readonly Prediction[];
  /** The worst, over the loads, of its p99 over the best p99 at that load (1: never beaten). */
  readonly regret: number;
}

/** What {@link recommend} suggests, with the reasons in words and every candidate's predictions. */
export interface Recommendation {
  readonly maxBatchSize: number;
  /** The fixed window recommended; `undefined` when the adaptive policy is. */
  readonly maxDelayMs: number | undefined;
  readonly policy: 'greedy' | 'adaptive';
  readonly why: readonly string[];
  readonly candidates: readonly Candidate[];
}

/** Options of {@link recommend}. */
export interface RecommendOptions {
  /**
   * The loads to predict at, as fractions of the model's throughput in full batches.
   * @default [0.3, 0.7, 0.95]
   */
  readonly loads?: readonly number[];
  /**
   * The latency budget (`maxLatencyMs`): the adaptive policy's target, and what counts as a miss.
   * @default Infinity
   */
  readonly maxLatencyMs?: number;
  /**
   * Requests simulated per setting and load.
   * @default 3000
   */
  readonly requests?: number;
}

/**
 * How much cheaper per item a batch must be, relative to the best measured, to count: within 10 %
 * of the best cost per item is "as good", since run-to-run noise on a busy CPU is about that.
 */
const GOOD_ENOUGH = 1.1;

/**
 * How close to the best p99 a setting must come to tie with it: the simulation's own spread from
 * seed to seed is about that. Among ties the simplest setting wins (the smallest window, then the
 * adaptive policy, which costs more CPU per request).
 */
const TIE = 1.03;

/** The smallest batch size whose cost per item is within 10 % of the best measured. */
export function chooseBatchSize(timings: readonly BatchTiming[]): BatchTiming {
  if (timings.length === 0) throw new RangeError('recommend: no timings');
  const perItem = (t: BatchTiming): number => t.medianMs / t.batchSize;
  const best = Math.min(...timings.map(perItem));
  return [...timings].sort((a, b) => a.batchSize - b.batchSize).find((t) => perItem(t) <= best * GOOD_ENOUGH) as BatchTiming;
}

/** The run time of a batch of `rows`, interpolated between the measured sizes (and extended past them along the nearest segment). */
export function costCurve(timings: readonly BatchTiming[]): (rows: number) => number {
  const pts = [...timings].sort((a, b) => a.batchSize - b.batchSize);
  if (pts.length === 1) {
    const only = pts[0] as BatchTiming;
    return (rows) => (only.medianMs * rows) / only.batchSize;
  }
  return (rows) => {
    let i = pts.findIndex((p) => p.batchSize >= rows);
    if (i <= 0) i = i === 0 ? 1 : pts.length - 1;
    const lo = pts[i - 1] as BatchTiming;
    const hi = pts[i] as BatchTiming;
    const slope = (hi.medianMs - lo.medianMs) / (hi.batchSize - lo.batchSize);
    return Math.max(1e-3, lo.medianMs + slope * (rows - lo.batchSize));
  };
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/**
 * Recommends settings by playing the measured run times through the real host: `maxBatchSize` is
 * the smallest batch whose cost per item is within 10 % of the best measured; then each candidate
 * (`maxDelayMs` 0, a quarter, half, one and two runs of that batch, and the adaptive policy) meets
 * the same Poisson arrivals at each load on a simulated clock, and the one whose p99 is never far
 * from the best at any load wins (ties go to the simplest). Predictions, not promises: a real
 * machine adds its own slow spells, which every setting meets alike.
 *
 * @example
 * ```ts
 * const rec = await recommend([{ batchSize: 1, runs: 9, medianMs: 1.5 }, { batchSize: 32, runs: 9, medianMs: 17 }]);
 * rec.maxDelayMs; // 0: no wait beats the greedy host at any load
 * ```
 */
export async function recommend(timings: readonly BatchTiming[], options: RecommendOptions = {}): Promise<Recommendation> {
  const chosen = chooseBatchSize(timings);
  const loads = options.loads ?? [0.3, 0.7, 0.95];
  const budget = options.maxLatencyMs ?? Infinity;
  const requests = options.requests ?? 3000;
  const cost = costCurve(timings);
  const full = cost(chosen.batchSize);
  const model: SimModel = { a: 0, b: full / chosen.batchSize, maxBatchSize: chosen.batchSize, maxLatencyMs: budget, cost: (rows) => cost(rows) };
  const capacity = chosen.batchSize / full; // requests per ms in full batches
  const windows = [...new Set([0, full / 4, full / 2, full, full * 2].map(round2))];
  const policies: Array<{ label: string; policy: SimPolicy }> = [
    ...(chosen.batchSize === 1 ? [0] : windows).map((w) => ({ label: `maxDelayMs ${w}`, policy: { kind: 'fixed' as const, maxDelayMs: w } })),
    ...(chosen.batchSize === 1 ? [] : [{ label: 'adaptive', policy: { kind: 'adaptive' as const } }]),
  ];
  const raw: Prediction[][] = [];
  for (const { policy } of policies) {
    const row: Prediction[] = [];
    for (const [i, load] of loads.entries()) {
      const r = await simulate(model, policy, poissonArrivals(load * capacity, requests, 1000 + i));
      row.push({ load, p50: r.p50, p99: r.p99, overBudget: r.overSlo, shed: r.shed });
    }
    raw.push(row);
  }
  const bestAt = loads.map((_, i) => Math.min(...raw.map((row) => (row[i] as Prediction).p99)));
  const candidates: Candidate[] = policies.map((p, c) => ({
    ...p,
    predictions: raw[c] as Prediction[],
    regret: Math.max(...(raw[c] as Prediction[]).map((pr, i) => pr.p99 / (bestAt[i] as number))),
  }));
  const least = Math.min(...candidates.map((c) => c.regret));
  // Candidates are listed simplest first, so the first tie is the simplest.
  const winner = candidates.find((c) => c.regret <= least * TIE) as Candidate;
  const perItem = (t: BatchTiming): number => t.medianMs / t.batchSize;
  const single = timings.find((t) => t.batchSize === 1);
  const gain = single === undefined ? 1 : perItem(single) / perItem(chosen);
  const loadList = loads.map((l) => `${Math.round(l * 100)}%`).join(', ');
  const why = [
    `batch ${chosen.batchSize} costs ${perItem(chosen).toFixed(4)} ms per item (${gain.toFixed(2)}x cheaper than batch 1), within 10% of the best measured`,
    `played through the host at ${loadList} of its full-batch throughput (${(capacity * 1000).toFixed(0)} req/s), ${winner.label} ` +
      (winner.regret <= 1 + 1e-9
        ? 'had the lowest p99 at every load'
        : `came within ${((winner.regret - 1) * 100).toFixed(0)}% of the best p99 at every load${winner.regret > least ? ', as close as any setting (within 3%) and simpler' : ', closer than any other setting'}`) +
      (winner.label === 'maxDelayMs 0' && candidates.length > 1 ? ': the host already batches what arrives while the model runs, and a wait only adds latency' : ''),
  ];
  return {
    maxBatchSize: chosen.batchSize,
    maxDelayMs: winner.policy.kind === 'fixed' ? winner.policy.maxDelayMs : undefined,
    policy: winner.policy.kind === 'fixed' ? 'greedy' : 'adaptive',
    why,
    candidates,
  };
}

/** The predictions as a table: a row per candidate, p50/p99 per load. */
export function predictionTable(rec: Recommendation): string {
  const first = rec.candidates[0];
  if (first === undefined) return '';
  const withBudget = rec.candidates.some((c) => c.predictions.some((p) => p.overBudget > 0 || p.shed > 0));
  const head = ['setting', ...first.predictions.map((p) => `${Math.round(p.load * 100)}%: p50 / p99 ms${withBudget ? ' (late, shed)' : ''}`)];
  const rows = rec.candidates.map((c) => [
    c.label,
    ...c.predictions.map((p) => `${p.p50.toFixed(2)} / ${p.p99.toFixed(2)}${withBudget ? ` (${p.overBudget}, ${p.shed})` : ''}`),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const fmt = (r: readonly string[]): string => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ');
  return `${fmt(head)}\n${rows.map(fmt).join('\n')}\n`;
}
