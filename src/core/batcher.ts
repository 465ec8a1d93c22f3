/**
 * The result of {@link Batcher.merge}: the value handed to the batch function, and whatever
 * {@link Batcher.split} needs to cut the output back into per-item results.
 */
export interface Merged<Batch, Ctx> {
  /** What the batch function receives. */
  readonly batch: Batch;
  /** Passed unchanged to `split` (row counts, padding lengths...). */
  readonly ctx: Ctx;
  /** Fraction (0..1) of the batch's input elements that are padding, for reports. @default 0 */
  readonly padding?: number;
}

/**
 * How a batcher divides the items of a released batch: each group is a separate model call, and
 * items it refuses are rejected alone with their error. Groups start in order; they run at the
 * same time on the host's free batch slots (`maxConcurrentBatches`), else one after another, and
 * every item's result comes back in item order either way.
 */
export interface Partition {
  /** Indexes into the items, one array per model call. Every accepted index appears once. */
  readonly groups: ReadonlyArray<ReadonlyArray<number>>;
  /** Items that cannot be batched, each rejected with its own error. */
  readonly rejected?: ReadonlyArray<{ readonly index: number; readonly error: Error }>;
}

/**
 * The merge/split strategy between single requests and the batch function. The contract:
 * `split(run(merge(items).batch), ctx)` returns one result per item, in item order; a result may
 * be an `Error`, which rejects only that item's caller. Batchers are pure (no I/O) so they can run
 * on either side of a worker boundary.
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 * @typeParam Batch - what the batch function receives.
 * @typeParam BatchOut - what the batch function returns.
 * @typeParam Ctx - what `merge` passes to `split`.
 *
 * @example
 * ```ts
 * // Sum-of-strings batcher: joins items with '\n' and splits the model's lines back.
 * const lines: Batcher<string, string, string, string, number> = {
 *   merge: (items) => ({ batch: items.join('\n'), ctx: items.length }),
 *   split: (out, n) => out.split('\n', n),
 * };
 * ```
 */
export interface Batcher<In, Out, Batch = unknown, BatchOut = unknown, Ctx = unknown> {
  /**
   * Rows in one request, counted against `maxBatchSize`. Called once per request, when it is
   * queued; throwing rejects that request alone.
   * @default every request is 1 row
   */
  rows?(item: In): number;
  /**
   * Divides a released batch into groups that can be merged together (same shapes, same length
   * bucket...) and items that must be refused.
   * @default one group with every item
   */
  partition?(items: readonly In[]): Partition;
  /** Builds the batch function's input from the items of one group. */
  merge(items: readonly In[]): Merged<Batch, Ctx>;
  /** Cuts the batch function's output back into one result (or Error) per item, in order. */
  split(output: BatchOut, ctx: Ctx): ReadonlyArray<Out | Error>;
  /**
   * Rows `start .. start + count` of a request, as a request of its own: how a host with
   * `splitOversize` cuts a request of more rows than `maxBatchSize` into parts.
   * @default none (such requests are refused with a `RangeError`)
   */
  sliceRows?(item: In, start: number, count: number): In;
  /**
   * The results of a request's parts (from {@link Batcher.sliceRows}), in order, joined into the
   * result the whole request would have had.
   * @default none
   */
  joinRows?(parts: readonly Out[]): Out;
}
