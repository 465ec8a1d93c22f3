import type { Partition } from '../core/batcher';
import { describe } from '../core/describe';
import type { TensorLike } from '../tensor/tensor-like';
import { PadBatcher, type PadBatcherOptions, type PadInput } from './pad-batcher';
import { TensorInputError } from './tensor-input-error';
import type { TensorInput } from './tensor-items';

/** Options of {@link BucketBatcher}: the bucket bounds, plus every {@link PadBatcherOptions} option. */
export interface BucketBatcherOptions<In = unknown> extends PadBatcherOptions {
  /**
   * Ascending upper bounds of length: an item of length `n` goes to the first bucket whose bound
   * is `>= n`. Each bucket runs as its own sub-batch (model call), padded within itself.
   */
  buckets: readonly number[];
  /**
   * An item's length, for choosing its bucket.
   * @default its size on `padAxis` (of its first padded input)
   */
  lengthOf?: (item: In) => number;
  /**
   * What to do with an item longer than the last bound: `'group'` runs such items together in
   * one extra bucket (padded to the longest of them); `'reject'` rejects them alone with a
   * {@link TensorInputError}.
   * @default 'group'
   */
  overflow?: 'group' | 'reject';
  /**
   * `'longest'` pads each sub-batch to its longest item (least waste); `'bucket'` pads it to the
   * bucket's bound, so the model only ever sees a few lengths (engines that compile per shape).
   * Items in the overflow bucket are always padded to their longest.
   * @default 'longest'
   */
  padTo?: 'longest' | 'bucket';
}

/**
 * Groups variable-length items into length buckets, each run as its own padded sub-batch, so that
 * short items are not padded to the length of long ones. Padding works as in
 * {@link PadBatcher} (mask, lengths, un-padding); `Merged.padding` reports the waste of each
 * sub-batch, and the host's batch reports average it over the sub-batches, weighted by their
 * request counts (as `paddingWaste`).
 *
 * @example
 * ```ts
 * // Text lines [1, 3, 48, W] for an OCR recognizer; widths up to 320, 640, 1280 batch together.
 * const host = new ModelHost(async (x: Tensor) => (await session.run({ x })).y as Tensor, {
 *   maxBatchSize: 16,
 *   batcher: new BucketBatcher<Tensor>({ buckets: [320, 640, 1280], padAxis: 3, unpadAxis: 1 }),
 * });
 * ```
 */
export class BucketBatcher<In extends PadInput = TensorLike, Out extends TensorInput = In, Batch = In> extends PadBatcher<In, Out, Batch> {
  /** The ascending upper bounds of the buckets. */
  readonly buckets: readonly number[];
  readonly #lengthOf: ((item: In) => number) | undefined;
  readonly #overflow: 'group' | 'reject';
  readonly #padTo: 'longest' | 'bucket';

  constructor(options: BucketBatcherOptions<In>) {
    const where = 'BucketBatcher';
    if (typeof options !== 'object' || options === null) throw new TypeError(`${where}: expected an options object with \`buckets\`, got ${describe(options)}`);
    const { buckets, lengthOf, overflow, padTo, ...pad } = options;
    super(pad);
    if (!Array.isArray(buckets) || buckets.length === 0 || !buckets.every((b, i) => Number.isInteger(b) && b > 0 && (i === 0 || b > (buckets[i - 1] as number)))) {
      throw new TypeError(`${where}: expected \`buckets\` to be a non-empty array of ascending positive integers, got ${Array.isArray(buckets) ? JSON.stringify(buckets) : describe(buckets)}`);
    }
    if (lengthOf !== undefined && typeof lengthOf !== 'function') throw new TypeError(`${where}: expected \`lengthOf\` to be a function (item) => number, got ${describe(lengthOf)}`);
    if (overflow !== undefined && overflow !== 'group' && overflow !== 'reject') throw new TypeError(`${where}: expected \`overflow\` to be 'group' or 'reject', got ${describe(overflow)}`);
    if (padTo !== undefined && padTo !== 'longest' && padTo !== 'bucket') throw new TypeError(`${where}: expected \`padTo\` to be 'longest' or 'bucket', got ${describe(padTo)}`);
    this.buckets = [...buckets];
    this.#lengthOf = lengthOf;
    this.#overflow = overflow ?? 'group';
    this.#padTo = padTo ?? 'longest';
  }

  /** The index of the bucket an item of this length goes to; `buckets.length` for the overflow bucket. */
  bucketOf(length: number): number {
    const i = this.buckets.findIndex((b) => length <= b);
    return i < 0 ? this.buckets.length : i;
  }

  /** Sub-batches by signature, then by bucket (ascending); overflowing items grouped or rejected. */
  override partition(items: readonly In[]): Partition {
    const { groups, rejected } = this.groupBySignature(items);
    const out: number[][] = [];
    const last = this.buckets[this.buckets.length - 1] as number;
    for (const group of groups) {
      const byBucket = new Map<number, number[]>();
      for (const { index, length: padLength } of group) {
        let length = padLength;
        if (this.#lengthOf !== undefined) {
          try {
            length = this.#lengthOf(items[index] as In);
            if (typeof length !== 'number' || !(length >= 0)) throw new TypeError(`BucketBatcher: expected \`lengthOf\` to return a non-negative number, got ${describe(length)}`);
          } catch (error) {
            rejected.push({ index, error: error instanceof Error ? error : new Error(`BucketBatcher: lengthOf threw ${describe(error)}`) });
            continue;
          }
        }
        const bucket = this.bucketOf(length);
        if (bucket === this.buckets.length && this.#overflow === 'reject') {
          rejected.push({ index, error: new TensorInputError('BucketBatcher', 'the request', `a length of at most ${last} (the last bucket)`, `length ${length}`) });
          continue;
        }
        const list = byBucket.get(bucket);
        if (list === undefined) byBucket.set(bucket, [index]);
        else list.push(index);
      }
      for (const bucket of [...byBucket.keys()].sort((a, b) => a - b)) out.push(byBucket.get(bucket) as number[]);
    }
    return { groups: out, rejected };
  }

  /** With `padTo: 'bucket'`, the bound of the bucket of the longest item. @internal */
  protected override minimumLength(items: readonly In[], lengths: readonly number[]): number {
    if (this.#padTo !== 'bucket') return 0;
    const measured = this.#lengthOf === undefined ? lengths : items.map((it) => (this.#lengthOf as (item: In) => number)(it));
    const bucket = this.bucketOf(Math.max(...measured));
    return bucket < this.buckets.length ? (this.buckets[bucket] as number) : 0;
  }
}
