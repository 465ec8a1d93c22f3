import type { Batcher, Merged, Partition } from '../core/batcher';
import { describe } from '../core/describe';
import { concatInto } from '../tensor/copy';
import { allocate, coercePadValue, DTYPES, isTensorType, type TensorType } from '../tensor/dtypes';
import { tensorBuilder, type TensorFactory, type TensorLike } from '../tensor/tensor-like';
import { checkAxis, checkKeys, checkBoolean } from './options';
import { TensorInputError } from './tensor-input-error';
import { inputLabel, readItem, signature, splitOutput, type Layout, type ReadItem, type TensorInput, type TensorRecord } from './tensor-items';

/** A value to pad with: a number (or bigint for 64-bit integers), a boolean for `bool`, a string for `string`. */
export type PadValue = number | bigint | string | boolean;

/** Options of {@link PadBatcher} (and of {@link BucketBatcher}, which pads the same way). */
export interface PadBatcherOptions {
  /**
   * The batch axis: items are concatenated along it, and an item's row count is its size on it.
   * @default 0
   */
  axis?: number;
  /**
   * The variable-length axis (in the item's dims, batch axis included): shorter items are padded
   * at the end of it to the longest item of their sub-batch. Must differ from `axis`.
   * @default 1
   */
  padAxis?: number;
  /**
   * Which keys of a record item are padded. Keys not listed are concatenated as they are and must
   * have the same dims (apart from the batch axis) to share a sub-batch.
   * @default every key whose rank reaches `padAxis`
   */
  pad?: readonly string[];
  /**
   * The pad value, or one per key of a record item. `float16` takes the raw bits (0 is +0).
   * @default 0 (`''` for string tensors)
   */
  padValue?: PadValue | { readonly [key: string]: PadValue };
  /**
   * When set, the batch is a record with an attention mask under this key: `[rows, length]`,
   * 1 where an item has data, 0 where it was padded.
   * @default no mask
   */
  maskKey?: string;
  /**
   * The dtype of the mask.
   * @default 'int64'
   */
  maskType?: TensorType;
  /**
   * When set, the batch is a record with each row's unpadded length under this key: `[rows]`.
   * @default no lengths
   */
  lengthsKey?: string;
  /**
   * The dtype of the lengths.
   * @default 'int64'
   */
  lengthsType?: TensorType;
  /**
   * The key of a single-tensor item in the batch record, when `maskKey` or `lengthsKey` turns
   * the batch into a record.
   * @default 'input'
   */
  key?: string;
  /**
   * The batch axis of the outputs.
   * @default the same as `axis`
   */
  outputAxis?: number;
  /**
   * When set, each item's outputs are trimmed along this axis to the item's own length; if the
   * model changes the length (a strided encoder), in proportion: `ceil(length × outputLength /
   * paddedLength)`.
   * @default outputs are not trimmed
   */
  unpadAxis?: number;
  /**
   * Which outputs `unpadAxis` trims (record keys, or tuple positions), for models that also
   * return pooled, unpadded outputs.
   * @default every output whose rank reaches `unpadAxis`
   */
  unpadOutputs?: ReadonlyArray<string | number>;
  /**
   * Builds the batch's tensors and each item's output tensors.
   * @default a tensor of the same class as the one it is made from, through
   * `new ctor(type, data, dims)` (onnxruntime's signature), or a plain `{ type, data, dims }`
   */
  tensor?: TensorFactory;
  /**
   * Give each caller a view (`subarray`) into the batch's output instead of a copy of its rows,
   * where the layout allows it (typed-array data, rows contiguous: every axis before the batch
   * axis of size 1, and nothing to un-pad). Saves a copy and an allocation per request; the
   * price is that a result keeps its whole batch's output buffer alive for as long as the caller
   * holds it (a cache of results holds every batch they came from), and that the views share one
   * buffer (each caller's rows are its own; writing past them is not possible through the view).
   * @default false (every caller gets a copy of its rows)
   */
  outputViews?: boolean;
}

/** What {@link PadBatcher.merge} hands to {@link PadBatcher.split}. */
export interface PadContext {
  /** Rows of each item, in order. */
  readonly rows: readonly number[];
  /** Their sum: the row count every output must have. */
  readonly total: number;
  /** Each item's length along `padAxis` (of its first padded input). */
  readonly lengths: readonly number[];
  /** The padded length of the batch. */
  readonly length: number;
}

/** An item of {@link PadBatcher}: one tensor, or a record of tensors. */
export type PadInput<T extends TensorLike = TensorLike> = T | TensorRecord<T>;

const PAD_OPTIONS = ['axis', 'padAxis', 'pad', 'padValue', 'maskKey', 'maskType', 'lengthsKey', 'lengthsType', 'key', 'outputAxis', 'unpadAxis', 'unpadOutputs', 'tensor', 'outputViews'];

/** A read item plus which of its inputs are padded, and its length. @internal */
interface PadItem extends ReadItem {
  readonly padded: readonly boolean[];
  readonly length: number;
}

/**
 * Pads variable-length sequences to the longest in their sub-batch along `padAxis`, and
 * concatenates them along `axis`. Items are a tensor (`[1, T]`, `[1, 3, 48, W]`...) or a record
 * of tensors (`{ input_ids, token_type_ids }`); with a record, `pad` says which keys are padded
 * (by default every key with a `padAxis`). Asked for, it adds an attention mask (`maskKey`) or the
 * lengths (`lengthsKey`) to the batch, and trims each item's outputs back to its own length
 * (`unpadAxis`). `Merged.padding` reports the fraction of the batch's input elements that are
 * padding.
 *
 * Items whose other dims or dtypes differ run in separate sub-batches; malformed items are
 * rejected alone with a {@link TensorInputError}. Each item's "length" (for the mask, the
 * lengths, un-padding and buckets) is the `padAxis` size of its first padded input.
 *
 * @typeParam In - one request: a tensor or a record of tensors.
 * @typeParam Out - one result, in the layout the batch function returns.
 * @typeParam Batch - what the batch function receives: `In`, or a record when `maskKey` or
 * `lengthsKey` is set.
 *
 * @example
 * ```ts
 * // Token ids [1, T] of varying T; the model takes ids and an attention mask, returns [N, T, H].
 * const batcher = new PadBatcher<Tensor, Tensor, Record<string, Tensor>>({
 *   padAxis: 1, key: 'input_ids', maskKey: 'attention_mask', unpadAxis: 1,
 * });
 * const host = new ModelHost(async (feeds) => (await session.run(feeds)).last_hidden_state as Tensor, {
 *   maxBatchSize: 16, batcher,
 * });
 * const h = await host.inference(new Tensor('int64', ids, [1, ids.length])); // h.dims [1, T, H]
 * ```
 */
export class PadBatcher<In extends PadInput = TensorLike, Out extends TensorInput = In, Batch = In>
  implements Batcher<In, Out, Batch, Out, PadContext>
{
  /** The batch axis of the inputs. */
  readonly axis: number;
  /** The padded axis. */
  readonly padAxis: number;
  /** The batch axis of the outputs. */
  readonly outputAxis: number;
  readonly #o: PadBatcherOptions;
  readonly #unpadAxis: number | undefined;
  readonly #build: ReturnType<typeof tensorBuilder>;
  readonly #views: boolean;
  readonly #where: string;

  constructor(options: PadBatcherOptions = {}) {
    // Subclasses (BucketBatcher) get their own name in messages.
    const where = new.target.name;
    checkKeys(where, options, PAD_OPTIONS);
    this.#where = where;
    this.axis = checkAxis(where, 'axis', options.axis ?? 0);
    this.padAxis = checkAxis(where, 'padAxis', options.padAxis ?? 1);
    if (this.padAxis === this.axis) throw new RangeError(`${where}: expected \`padAxis\` to differ from the batch axis ${this.axis}, got ${this.padAxis}`);
    this.outputAxis = checkAxis(where, 'outputAxis', options.outputAxis ?? this.axis);
    if (options.unpadAxis !== undefined) {
      this.#unpadAxis = checkAxis(where, 'unpadAxis', options.unpadAxis);
      if (this.#unpadAxis === this.outputAxis) {
        throw new RangeError(`${where}: expected \`unpadAxis\` to differ from the output batch axis ${this.outputAxis}, got ${this.#unpadAxis}`);
      }
    }
    for (const name of ['maskKey', 'lengthsKey', 'key'] as const) {
      const v = options[name];
      if (v !== undefined && (typeof v !== 'string' || v === '')) throw new TypeError(`${where}: expected \`${name}\` to be a non-empty string, got ${describe(v)}`);
    }
    if (options.maskKey !== undefined && options.maskKey === options.lengthsKey) {
      throw new TypeError(`${where}: expected \`maskKey\` and \`lengthsKey\` to differ, got ${JSON.stringify(options.maskKey)} for both`);
    }
    for (const name of ['maskType', 'lengthsType'] as const) {
      const v = options[name];
      if (v !== undefined && (!isTensorType(v) || v === 'string')) throw new TypeError(`${where}: expected \`${name}\` to be a numeric tensor type, got ${describe(v)}`);
    }
    if (options.pad !== undefined && (!Array.isArray(options.pad) || !options.pad.every((k) => typeof k === 'string'))) {
      throw new TypeError(`${where}: expected \`pad\` to be an array of key names, got ${describe(options.pad)}`);
    }
    if (options.unpadOutputs !== undefined && !Array.isArray(options.unpadOutputs)) {
      throw new TypeError(`${where}: expected \`unpadOutputs\` to be an array of output names or positions, got ${describe(options.unpadOutputs)}`);
    }
    const pv = options.padValue;
    if (pv !== undefined && typeof pv === 'object' && (pv === null || Array.isArray(pv))) {
      throw new TypeError(`${where}: expected \`padValue\` to be a number, bigint, boolean, string or a record of them per key, got ${describe(pv)}`);
    }
    this.#o = options;
    this.#build = tensorBuilder(options.tensor, where);
    this.#views = checkBoolean(where, 'outputViews', options.outputViews);
  }

  /** The request's size on the batch axis. Throws a {@link TensorInputError} for a malformed request. */
  rows(item: In): number {
    return this.readPadItem(item, undefined).rows;
  }

  /** One group per distinct signature (dtypes and dims, apart from the batch and padded axes). */
  partition(items: readonly In[]): Partition {
    const { groups, rejected } = this.groupBySignature(items);
    return { groups: groups.map((g) => g.map((x) => x.index)), rejected };
  }

  /** Pads and concatenates the items, adding the mask and lengths when asked. */
  merge(items: readonly In[]): Merged<Batch, PadContext> {
    if (items.length === 0) throw new RangeError(`${this.#where}: merge needs at least one item, got none`);
    const read: PadItem[] = [];
    for (const item of items) read.push(this.readPadItem(item, read[0]?.layout));
    const first = read[0] as PadItem;
    const lengths = read.map((r) => r.length);
    const maxLength = Math.max(...lengths);
    const target = this.minimumLength(items, lengths);
    let padded = 0;
    let total = 0;
    const names = first.layout.kind === 'tensor' ? [this.#o.key ?? 'input'] : first.layout.names;
    const out: Record<string, TensorLike> = {};
    first.tensors.forEach((t0, k) => {
      const isPadded = first.padded[k] as boolean;
      const want = signature(t0, ...(isPadded ? [this.axis, this.padAxis] : [this.axis]));
      let longest = 0;
      const blocks = read.map((r, i) => {
        const t = r.tensors[k] as TensorLike;
        const got = signature(t, ...(isPadded ? [this.axis, this.padAxis] : [this.axis]));
        if (got !== want) {
          throw new TensorInputError(this.#where, inputLabel(first.layout.kind, first.layout.names[k] ?? ''), `${want} like the first item of the batch (partition groups items by shape)`, `${got} in item ${i}`);
        }
        if (isPadded) longest = Math.max(longest, t.dims[this.padAxis] as number);
        padded -= t.data.length;
        return t;
      });
      const name = names[k] as string;
      const pad = isPadded ? { axis: this.padAxis, length: Math.max(longest, target), value: this.#padValue(t0.type as TensorType, name) } : undefined;
      const { data, dims } = concatInto(t0.type as TensorType, blocks, this.axis, pad);
      padded += data.length;
      total += data.length;
      out[name] = this.#build(t0, t0.type, data, dims);
    });
    const rows = read.map((r) => r.rows);
    const totalRows = rows.reduce((a, b) => a + b, 0);
    const length = Math.max(maxLength, target);
    const sample = first.tensors[0];
    if (this.#o.maskKey !== undefined) {
      const type = this.#o.maskType ?? 'int64';
      const data = allocate(type, totalRows * length);
      const one = DTYPES[type].bigint ? 1n : 1;
      let row = 0;
      read.forEach((r) => {
        for (let j = 0; j < r.rows; j++, row++) (data as Float64Array).fill(one as number, row * length, row * length + r.length);
      });
      out[this.#o.maskKey] = this.#build(sample, type, data, [totalRows, length]);
    }
    if (this.#o.lengthsKey !== undefined) {
      const type = this.#o.lengthsType ?? 'int64';
      const big = DTYPES[type].bigint;
      const data = allocate(type, totalRows) as Float64Array;
      let row = 0;
      read.forEach((r) => {
        for (let j = 0; j < r.rows; j++, row++) data[row] = (big ? BigInt(r.length) : r.length) as number;
      });
      out[this.#o.lengthsKey] = this.#build(sample, type, data, [totalRows]);
    }
    const asRecord = first.layout.kind === 'record' || this.#o.maskKey !== undefined || this.#o.lengthsKey !== undefined;
    const batch = (asRecord ? out : out[names[0] as string]) as Batch;
    return { batch, ctx: { rows, total: totalRows, lengths, length }, padding: total > 0 ? padded / total : 0 };
  }

  /**
   * Cuts every output along `outputAxis` into each item's rows, trimmed along `unpadAxis` when
   * set. Throws a `BatchSizeMismatchError` when an output's row count is not the batch's.
   */
  split(output: Out, ctx: PadContext): ReadonlyArray<Out | Error> {
    const axis = this.#unpadAxis;
    const only = this.#o.unpadOutputs?.map(String);
    const trim =
      axis === undefined
        ? undefined
        : (item: number, name: string, dims: readonly number[]): { axis: number; keep: number } | undefined => {
            if (dims.length <= axis || (only !== undefined && name !== '' && !only.includes(name))) return undefined;
            const outLength = dims[axis] as number;
            const own = ctx.lengths[item] as number;
            const keep = outLength === ctx.length || ctx.length === 0 ? Math.min(own, outLength) : Math.min(outLength, Math.ceil((own * outLength) / ctx.length));
            return { axis, keep };
          };
    return splitOutput(output, { where: this.#where, axis: this.outputAxis, rows: ctx.rows, total: ctx.total, build: this.#build, views: this.#views, ...(trim ? { trim } : {}) }) as Out[];
  }

  /**
   * The length items are padded to at least (the bucket bound, for {@link BucketBatcher});
   * 0 pads to the longest item.
   * @internal
   */
  protected minimumLength(_items: readonly In[], _lengths: readonly number[]): number {
    return 0;
  }

  /**
   * Validates items and groups them by signature, keeping each item's length for bucketing.
   * @internal
   */
  protected groupBySignature(items: readonly In[]): {
    groups: Array<Array<{ index: number; length: number }>>;
    rejected: Array<{ index: number; error: Error }>;
  } {
    const groups = new Map<string, Array<{ index: number; length: number }>>();
    const rejected: Array<{ index: number; error: Error }> = [];
    let reference: Layout | undefined;
    items.forEach((item, index) => {
      try {
        const read = this.readPadItem(item, reference);
        reference ??= read.layout;
        const key = read.tensors.map((t, k) => signature(t, ...(read.padded[k] ? [this.axis, this.padAxis] : [this.axis]))).join(' | ');
        const group = groups.get(key);
        if (group === undefined) groups.set(key, [{ index, length: read.length }]);
        else group.push({ index, length: read.length });
      } catch (error) {
        rejected.push({ index, error: error as Error });
      }
    });
    return { groups: [...groups.values()], rejected };
  }

  /** Reads and validates one item, and finds which of its inputs are padded. @internal */
  protected readPadItem(item: unknown, reference: Layout | undefined): PadItem {
    const read = readItem(item, { where: this.#where, axis: this.axis, kinds: ['tensor', 'record'], reference });
    const { layout, tensors } = read;
    const names = layout.kind === 'tensor' ? [''] : layout.names;
    for (const generated of [this.#o.maskKey, this.#o.lengthsKey]) {
      if (generated !== undefined && layout.kind === 'record' && names.includes(generated)) {
        throw new TensorInputError(this.#where, inputLabel('record', generated), `no key ${JSON.stringify(generated)} (the batcher adds it)`, 'a tensor under that key');
      }
    }
    const listed = this.#o.pad;
    if (listed !== undefined && layout.kind === 'record') {
      for (const key of listed) {
        if (!names.includes(key)) throw new TensorInputError(this.#where, inputLabel('record', key), 'a tensor to pad (listed in `pad`)', 'no such key');
      }
    }
    const padded = tensors.map((t, k) => {
      const wanted = layout.kind === 'tensor' || listed === undefined || listed.includes(names[k] as string);
      if (wanted && t.dims.length <= this.padAxis) {
        if (layout.kind === 'record' && listed === undefined) return false;
        throw new TensorInputError(this.#where, inputLabel(layout.kind, names[k] as string), `a tensor of rank ${this.padAxis + 1} or more (pad axis ${this.padAxis})`, `shape [${t.dims.join(', ')}]`);
      }
      return wanted;
    });
    const firstPadded = padded.indexOf(true);
    if (firstPadded < 0) {
      throw new TensorInputError(this.#where, 'the request', `at least one input with a pad axis ${this.padAxis}`, `shapes ${tensors.map((t) => `[${t.dims.join(', ')}]`).join(', ')}`);
    }
    return { ...read, padded, length: (tensors[firstPadded] as TensorLike).dims[this.padAxis] as number };
  }

  #padValue(type: TensorType, key: string): number | bigint | string {
    const pv = this.#o.padValue;
    let value: PadValue | undefined = typeof pv === 'object' ? pv[key] : pv;
    value ??= DTYPES[type].zero;
    return coercePadValue(type, value, `${this.#where} (padValue for ${JSON.stringify(key)})`);
  }
}
