import { costCurve, playLoad, poissonArrivals, type PlayedSetting } from './load-simulation';

/** The measured latency of one batch size. */
export interface BatchTiming {
  /** Rows in the batch. */
  readonly batchSize: number;
  /** Timed runs (after the warm-up). */
  readonly runs: number;
  /** Median latency of one model call, in milliseconds. */
  readonly medianMs: number;
}

/** What {@link recommend} suggests, with the reasons in words. */
export interface Recommendation {
  readonly maxBatchSize: number;
  readonly maxDelayMs: number;
  readonly why: readonly string[];
}

/**
 * How much cheaper per item a batch must be, relative to the best measured, to count: within 10 %
 * of the best cost per item is "as good", since run-to-run noise on a busy CPU is about that.
 */
const GOOD_ENOUGH = 1.1;

/**
 * How much cheaper per item than batch 1 the chosen batch must be for a wait to pay. A host
 * already batches greedily: requests that arrive while a batch runs form the next one, with no
 * wait at all. A wait only adds the items that would arrive during it, so it is worth its latency
 * when batching at least halves the cost per item; below that (a 1.12x gain, say) it costs every
 * request latency for little throughput.
 */
const WAIT_PAYS = 2;

/**
 * Recommends settings from measured latencies:
 *
 * - `maxBatchSize`: the smallest batch size whose cost per item is within 10 % of the best
 *   measured. Larger batches would add latency for no meaningful throughput.
 * - `maxDelayMs`: `0` unless the chosen batch is at least 2× cheaper per item than batch 1 (the
 *   rule: a greedy host already batches what arrives while the model runs, so a wait pays only
 *   when batching halves the cost); then half the run time of a batch of that size, rounded to
 *   0.01 ms: long enough for a batch to fill at moderate load, and never adding more latency than
 *   the run itself costs.
 *
 * @example
 * ```ts
 * recommend([{ batchSize: 1, runs: 9, medianMs: 1 }, { batchSize: 8, runs: 9, medianMs: 2 }]);
 * // { maxBatchSize: 8, maxDelayMs: 1, why: [...] }
 * ```
 */
export function recommend(timings: readonly BatchTiming[]): Recommendation {
  if (timings.length === 0) throw new RangeError('recommend: no timings');
  const perItem = (t: BatchTiming): number => t.medianMs / t.batchSize;
  const best = Math.min(...timings.map(perItem));
  const chosen = [...timings].sort((a, b) => a.batchSize - b.batchSize).find((t) => perItem(t) <= best * GOOD_ENOUGH) as BatchTiming;
  const single = timings.find((t) => t.batchSize === 1);
  const gain = single === undefined ? 1 : perItem(single) / perItem(chosen);
  const why = [
    `batch ${chosen.batchSize} costs ${perItem(chosen).toFixed(4)} ms per item, within 10% of the best measured (${best.toFixed(4)} ms)`,
  ];
  if (chosen.batchSize === 1 || gain < WAIT_PAYS) {
    why.push(
      `batching is ${gain.toFixed(2)}x cheaper per item than batch 1, under the ${WAIT_PAYS}x a wait needs to pay ` +
        `(the host already batches what arrives while the model runs), so waiting for fuller batches would just add latency: maxDelayMs 0`,
    );
    return { maxBatchSize: chosen.batchSize, maxDelayMs: 0, why };
  }
  const delay = Math.max(0.01, Math.round((chosen.medianMs / 2) * 100) / 100);
  why.push(
    `batching is ${gain.toFixed(2)}x cheaper per item than batch 1; a batch of ${chosen.batchSize} runs in ${chosen.medianMs.toFixed(3)} ms, ` +
      `so a wait of half that (${delay} ms) lets batches fill at moderate load without adding more latency than a run`,
  );
  return { maxBatchSize: chosen.batchSize, maxDelayMs: delay, why };
}

/** One setting's predicted latency at each load, from the simulation. */
export interface LoadPrediction {
  /** `maxDelayMs N`, or `adaptive`. */
  readonly setting: string;
  /** Per load (a share of the chosen batch size's full-batch throughput): predicted p50 and p99 in ms. */
  readonly byLoad: ReadonlyArray<{ readonly load: number; readonly p50: number; readonly p99: number }>;
}

/** What {@link recommendForLoads} suggests: the batch size, and the window or policy that wins at the loads named. */
export interface LoadRecommendation extends Recommendation {
  /** `'adaptive'` when the adaptive policy's predicted p99 beat every window's; else the window (`maxDelayMs`). */
  readonly policy: 'greedy' | 'adaptive';
  readonly predictions: readonly LoadPrediction[];
}

/** How much better (lower worst p99 ratio) a setting with a wait, or the adaptive policy, must be than window 0 to be chosen. */
const CLEAR_WIN = 1.02;

/**
 * Recommends from the measured costs played through the real host at the loads named: picks
 * `maxBatchSize` as {@link recommend} does, then plays Poisson arrivals at each load (a share of
 * that batch size's full-batch throughput) through a host on a simulated clock whose batches cost
 * what was measured, for windows of 0, ¼, ½ and 1 batch run time and for the adaptive policy, and
 * recommends the setting whose worst p99, relative to the best at each load, is lowest. Window 0
 * wins ties (within 2%): a wait must earn its latency.
 *
 * @param options.loads - loads to play, as shares of full-batch throughput. @default [0.3, 0.7, 0.95]
 * @param options.requests - requests played per load and setting. @default 3000
 *
 * @example
 * ```ts
 * const rec = await recommendForLoads([{ batchSize: 1, runs: 9, medianMs: 1.3 }, { batchSize: 32, runs: 9, medianMs: 17 }]);
 * console.log(rec.maxDelayMs, rec.policy, rec.predictions);
 * ```
 */
export async function recommendForLoads(timings: readonly BatchTiming[], options: { loads?: readonly number[]; requests?: number } = {}): Promise<LoadRecommendation> {
  const loads = options.loads ?? [0.3, 0.7, 0.95];
  const requests = options.requests ?? 3000;
  if (loads.length === 0 || loads.some((l) => !(l > 0))) throw new RangeError(`recommendForLoads: expected loads above 0, got ${JSON.stringify(loads)}`);
  const base = recommend(timings);
  const size = base.maxBatchSize;
  const cost = costCurve(timings.map((t) => [t.batchSize, t.medianMs] as const));
  const run = cost(size);
  const round = (ms: number): number => Math.round(ms * 100) / 100;
  // A window cannot fill a batch of one: only window 0 then.
  const windows = size === 1 ? [0] : [...new Set([0, round(run / 4), round(run / 2), round(run)])].filter((w) => w === 0 || w >= 0.01);
  const settings: Array<{ name: string; setting: PlayedSetting }> = [
    ...windows.map((w) => ({ name: `maxDelayMs ${w}`, setting: { maxDelayMs: w } })),
    { name: 'adaptive', setting: { adaptive: true } as const },
  ];
  const predictions: LoadPrediction[] = settings.map((s) => ({ setting: s.name, byLoad: [] }));
  for (const [k, load] of loads.entries()) {
    const arrivals = poissonArrivals((load * size) / run, requests, 7919 + k);
    for (const [i, s] of settings.entries()) {
      const r = await playLoad(cost, s.setting, size, arrivals);
      (predictions[i]!.byLoad as Array<{ load: number; p50: number; p99: number }>).push({ load, p50: r.p50, p99: r.p99 });
    }
  }
  // Each setting's worst p99 against the best setting's at the same load.
  const best = loads.map((_, k) => Math.min(...predictions.map((p) => p.byLoad[k]!.p99)));
  const worst = predictions.map((p) => Math.max(...p.byLoad.map((b, k) => b.p99 / best[k]!)));
  let chosen = 0;
  for (let i = 1; i < predictions.length; i++) if (worst[i]! * CLEAR_WIN < worst[chosen]!) chosen = i;
  const pct = (l: number): string => `${Math.round(l * 100)}%`;
  const winner = predictions[chosen]!;
  const why = [
    base.why[0] as string,
    `played through the host at ${loads.map(pct).join(', ')} of batch ${size}'s throughput (${((1000 * size) / run).toFixed(0)} items/s), ` +
      `${winner.setting} has the lowest worst-case p99 (${winner.byLoad.map((b) => `${b.p99.toFixed(2)} ms at ${pct(b.load)}`).join(', ')}; ` +
      `${worst[chosen]!.toFixed(2)}x the best at its worst load)${chosen === 0 ? '' : `, against ${worst[0]!.toFixed(2)}x for maxDelayMs 0`}`,
  ];
  const adaptive = winner.setting === 'adaptive';
  return { maxBatchSize: size, maxDelayMs: adaptive ? 0 : (settings[chosen]!.setting as { maxDelayMs: number }).maxDelayMs, why, policy: adaptive ? 'adaptive' : 'greedy', predictions };
}
