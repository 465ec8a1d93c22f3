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
