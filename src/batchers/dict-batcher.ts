// The worked example of a custom Batcher (docs/batchers.md). What a key may be batched by, and
// the per-key batcher's checks and error restatements, are in dict-keys.ts.
import type { Batcher, Merged, Partition } from '../core/batcher';
import { describe, toError } from '../core/describe';
import { BatchSizeMismatchError } from '../core/errors';
import { cloneData, concatInto, sliceAxis } from '../tensor/copy';
import { formatShape, isTensorLike, tensorBuilder, tensorFault, type CheckedTensor, type TensorFactory, type TensorLike } from '../tensor/tensor-like';
import { checkKeys } from './options';
import { TensorInputError } from './tensor-input-error';
import { checkSpecs, keyFailure, keyRows, kindOf, mergeKey, relay, type KeyAxis, type KeyBatcher } from './dict-keys';
import { inputLabel, signature, type TensorRecord } from './tensor-items';

export type { KeyAxis } from './dict-keys';


/** Options of {@link DictBatcher}. */
export interface DictBatcherOptions {
  /**
   * Every input key of a request, with how it is batched ({@link KeyAxis}): its batch axis;
   * `'shared'` for a value passed to the model once per sub-batch (a sample rate, a temperature);
   * or a batcher for that key's tensors, such as a {@link PadBatcher} for a variable-length key.
   * Requests must have exactly these keys, and their batched keys must agree on the row count.
   *
   * A key with a batcher adds only its dtype and rank to the grouping, so requests whose padded
   * key differs in length share a model call; the batcher's own `partition` refines the groups
   * (a {@link BucketBatcher} buckets requests by that key's length). The merged batch's `padding`
   * is the fraction of all its input elements that are padding: the per-key paddings weighted by
   * each key's element count, non-padded keys counting as 0.
   *
   * @example
   * ```ts
   * // input_ids and attention_mask int64 [1, T] with T differing per request; temperature float32 [].
   * const batcher = new DictBatcher({
   *   inputs: {
   *     input_ids: new PadBatcher({ padAxis: 1, padValue: 0 }),
   *     attention_mask: new PadBatcher({ padAxis: 1, padValue: 0 }),
   *     temperature: 'shared',
   *   },
   * });
   * ```
   */
  inputs: { readonly [name: string]: KeyAxis };
  /**
   * The batch axis (or `'shared'`) of each output key. When given, the batch function may only
   * return these keys. Outputs are cut along these axes only: an output that keeps a padded axis
   * comes back at the padded length (use {@link PadBatcher} on records, with `unpadAxis`, to
   * trim it).
   * @default the axis of the input of the same name (for an input with a batcher, that batcher's
   * `outputAxis`, as {@link PadBatcher} and {@link ConcatBatcher} have), else 0
   */
  outputs?: { readonly [name: string]: number | 'shared' };
  /**
   * Builds the batch's tensors and each item's output tensors. A key with a batcher gets its batch
   * tensor from that batcher (and its `tensor` option).
   * @default a tensor of the same class as the one it is made from, through
   * `new ctor(type, data, dims)` (onnxruntime's signature), or a plain `{ type, data, dims }`
   */
  tensor?: TensorFactory;
}

/** What {@link DictBatcher.merge} hands to {@link DictBatcher.split}. */
export interface DictContext {
  /** Rows of each item, in order. */
  readonly rows: readonly number[];
  /** Their sum: the row count every batched output must have. */
  readonly total: number;
}

/** One checked item. */
interface DictItem {
  readonly tensors: ReadonlyMap<string, CheckedTensor>;
  readonly rows: number;
  /**
   * Dtype and dims of every key, with the batch axes starred (every axis, for keys with a batcher):
   * items with equal keys may share a batch.
   */
  readonly key: string;
}

const WHERE = 'DictBatcher';

/**
 * Batches dict-of-tensor items, such as onnxruntime feeds objects, with a batch axis of its own per
 * key, axes other than 0 included, keys marked `'shared'` passed through once per sub-batch, and
 * keys merged by a batcher of their own (a {@link PadBatcher} for a variable-length input).
 * Items whose shared values differ (dtype, dims or data), or whose batched keys differ in dtype or
 * non-batch dims, run in separate sub-batches; for a key with a batcher, only its dtype and rank
 * must match, and that batcher's `partition` decides the rest. An item with an unknown or missing
 * key, whose batched keys disagree on their row count, or that a key's batcher refuses, is
 * rejected alone with a {@link TensorInputError} naming the key. Outputs come back as a record
 * cut per key along that key's output axis.
 *
 * @example
 * ```ts
 * // Silero VAD: input [B, T], sr a shared int64 scalar, recurrent state h, c [2, B, 64].
 * const vad = new DictBatcher({
 *   inputs: { input: 0, sr: 'shared', h: 1, c: 1 },
 *   outputs: { output: 0, hn: 1, cn: 1 },
 * });
 * const host = new ModelHost((feeds: Record<string, Tensor>) => session.run(feeds), { maxBatchSize: 64, batcher: vad });
 * const { output, hn, cn } = await host.inference({ input, sr, h, c }); // hn.dims [2, 1, 64]
 * ```
 *
 * @example
 * ```ts
 * // A text model with token ids of varying length, padded per sub-batch, and a shared temperature.
 * const text = new DictBatcher({
 *   inputs: { input_ids: new PadBatcher({ padAxis: 1, padValue: 0 }), attention_mask: new PadBatcher({ padAxis: 1, padValue: 0 }), temperature: 'shared' },
 *   outputs: { logits: 0 },
 * });
 * ```
 */
export class DictBatcher<In extends TensorRecord = TensorRecord, Out extends TensorRecord = TensorRecord>
  implements Batcher<In, Out, In, Out, DictContext>
{
  /** The input keys and how each is batched. */
  readonly inputs: { readonly [name: string]: KeyAxis };
  /** The output keys and their batch axes, when given. */
  readonly outputs: { readonly [name: string]: number | 'shared' } | undefined;
  readonly #names: readonly string[];
  /** The keys with a batcher of their own, in key order. */
  readonly #batchers: ReadonlyArray<readonly [string, KeyBatcher]>;
  readonly #build: ReturnType<typeof tensorBuilder>;

  constructor(options: DictBatcherOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError(`${WHERE}: expected an options object with \`inputs\`, got ${describe(options)}`);
    checkKeys(WHERE, options, ['inputs', 'outputs', 'tensor']);
    this.inputs = checkSpecs('inputs', options.inputs);
    this.outputs = options.outputs === undefined ? undefined : (checkSpecs('outputs', options.outputs) as { readonly [name: string]: number | 'shared' });
    this.#names = Object.keys(this.inputs);
    if (this.#names.every((n) => this.inputs[n] === 'shared')) {
      throw new TypeError(`${WHERE}: expected at least one batched key in \`inputs\` (an axis or a batcher, not 'shared'), got ${JSON.stringify(this.inputs)}`);
    }
    this.#batchers = this.#names.flatMap((n) => {
      const spec = this.inputs[n] as KeyAxis;
      return typeof spec === 'object' ? [[n, spec] as const] : [];
    });
    this.#build = tensorBuilder(options.tensor, WHERE);
  }

  /**
   * The item's row count: the size of its batched keys on their axes, or as their batchers count
   * them. Throws a {@link TensorInputError} for a malformed item.
   */
  rows(item: In): number {
    return this.#read(item).rows;
  }

  /**
   * One group per distinct set of shapes and shared values, refined by the `partition` of each
   * key's batcher; malformed items, and items a key's batcher refuses, rejected alone.
   */
  partition(items: readonly In[]): Partition {
    const read: Array<DictItem | undefined> = [];
    const refused = new Map<number, Error>();
    items.forEach((item, index) => {
      try {
        read[index] = this.#read(item);
      } catch (error) {
        read[index] = undefined;
        refused.set(index, toError(error, `${WHERE}: reading item ${index}`));
      }
    });
    const accepted: number[] = [];
    read.forEach((r, index) => {
      if (r !== undefined) accepted.push(index);
    });
    // Two items share a model call only if every key's batcher also puts them together, so each
    // accepted item's label gathers its group number under every per-key partition.
    const labels = accepted.map((index) => (read[index] as DictItem).key);
    for (const [name, batcher] of this.#batchers) {
      if (batcher.partition === undefined) continue;
      let p: Partition;
      try {
        p = batcher.partition(accepted.map((index) => (read[index] as DictItem).tensors.get(name) as CheckedTensor));
      } catch (error) {
        throw keyFailure(name, batcher, 'partition', error);
      }
      const place = new Array<number>(accepted.length).fill(-1);
      p.groups.forEach((group, g) => {
        for (const local of group) if (local >= 0 && local < place.length) place[local] = g;
      });
      for (const { index: local, error } of p.rejected ?? []) {
        const index = accepted[local];
        if (index === undefined) continue;
        place[local] = -2;
        if (!refused.has(index)) refused.set(index, relay(name, batcher, error));
      }
      place.forEach((g, local) => {
        const index = accepted[local] as number;
        if (g === -1 && !refused.has(index)) {
          refused.set(index, new Error(`${WHERE}: the ${kindOf(batcher)} of ${inputLabel('record', name)} placed item ${index} in no group and did not reject it`));
        }
        labels[local] += ` #${g}`;
      });
    }
    const groups: Array<{ label: string; first: DictItem; indexes: number[] }> = [];
    accepted.forEach((index, local) => {
      if (refused.has(index)) return;
      const r = read[index] as DictItem;
      const label = labels[local] as string;
      const group = groups.find((g) => g.label === label && this.#sharedEqual(g.first, r) === undefined);
      if (group === undefined) groups.push({ label, first: r, indexes: [index] });
      else group.indexes.push(index);
    });
    const rejected = [...refused].sort((a, b) => a[0] - b[0]).map(([index, error]) => ({ index, error }));
    return { groups: groups.map((g) => g.indexes), rejected };
  }

  /**
   * Concatenates each batched key along its axis, merges each key with a batcher through that
   * batcher, and passes shared keys once, from the first item. `padding` is the fraction of the
   * batch's input elements that are padding, over every key.
   */
  merge(items: readonly In[]): Merged<In, DictContext> {
    if (items.length === 0) throw new RangeError(`${WHERE}: merge needs at least one item, got none`);
    const read = items.map((item) => this.#read(item));
    const first = read[0] as DictItem;
    read.forEach((r, i) => {
      if (r.key !== first.key) {
        const name = this.#names.find((n) => this.#signature(n, r.tensors) !== this.#signature(n, first.tensors)) as string;
        throw new TensorInputError(WHERE, inputLabel('record', name), `${this.#signature(name, first.tensors)} like the first item of the batch (partition groups items by shape)`, `${this.#signature(name, r.tensors)} in item ${i}`);
      }
      const differs = this.#sharedEqual(first, r);
      if (differs !== undefined) {
        throw new TensorInputError(WHERE, inputLabel('record', differs), 'the same shared value as the first item of the batch (partition groups items by shared values)', `a different value in item ${i}`);
      }
    });
    const batch: Record<string, TensorLike> = {};
    let elements = 0;
    let padded = 0;
    for (const name of this.#names) {
      const spec = this.inputs[name] as KeyAxis;
      const t0 = first.tensors.get(name) as CheckedTensor;
      if (spec === 'shared') {
        batch[name] = t0;
      } else if (typeof spec === 'number') {
        const { data, dims } = concatInto(t0.type, read.map((r) => r.tensors.get(name) as TensorLike), spec);
        batch[name] = this.#build(t0, t0.type, data, dims);
      } else {
        const merged = mergeKey(name, spec, read.map((r) => r.tensors.get(name) as CheckedTensor));
        batch[name] = merged.tensor;
        padded += merged.padding * merged.tensor.data.length;
      }
      elements += (batch[name] as TensorLike).data.length;
    }
    const rows = read.map((r) => r.rows);
    return { batch: batch as unknown as In, ctx: { rows, total: rows.reduce((a, b) => a + b, 0) }, padding: elements > 0 ? padded / elements : 0 };
  }

  /**
   * Cuts each batched output along its axis into every item's rows, and gives each item its own
   * copy of shared outputs. Throws a `BatchSizeMismatchError` when a batched output's row count is
   * not the batch's.
   */
  split(output: Out, ctx: DictContext): ReadonlyArray<Out | Error> {
    const single = isTensorLike(output);
    if (!single && (typeof output !== 'object' || output === null || Array.isArray(output))) {
      throw new TypeError(`${WHERE}: the batch function must return a record of tensors (or one tensor) with ${ctx.total} rows; it returned ${describe(output)}`);
    }
    const entries: Array<[string, CheckedTensor, number | 'shared']> = ((single ? [['', output]] : Object.entries(output)) as Array<[string, unknown]>).map(([name, t]) => {
      const label = single ? 'output' : `output ${JSON.stringify(name)}`;
      const fault = tensorFault(t);
      if (fault !== null) throw new TypeError(`${WHERE}: the batch function's ${label}: expected ${fault.expected}, got ${fault.actual}`);
      let axis = this.outputs?.[name];
      if (axis === undefined) {
        if (this.outputs !== undefined && !single) {
          throw new TypeError(`${WHERE}: the batch function returned ${label}, which is not among \`outputs\` (${Object.keys(this.outputs).join(', ')}); add it with its batch axis or 'shared'`);
        }
        axis = this.#defaultOutputAxis(name);
      }
      const key = axis;
      const dims = (t as TensorLike).dims;
      if (key !== 'shared') {
        const got = dims.length > key ? dims[key] : undefined;
        if (got !== ctx.total) {
          throw new BatchSizeMismatchError(
            `${WHERE}: the batch function's ${label} must have one row per input row on axis ${key}: expected ${ctx.total} rows (${ctx.rows.length} requests), ` +
              `got ${got === undefined ? `shape ${formatShape(dims)} with no axis ${key}` : `${got} (shape ${formatShape(dims)})`}`,
            ctx.total,
            got ?? 0,
          );
        }
      }
      return [name, t as CheckedTensor, key];
    });
    const results: Out[] = [];
    let start = 0;
    for (const count of ctx.rows) {
      const item: Record<string, TensorLike> = {};
      for (const [name, t, axis] of entries) {
        // Shared outputs are copied too, so that every caller owns what it gets.
        const s = axis === 'shared' ? { data: cloneData(t.data), dims: [...t.dims] } : sliceAxis(t.type, t.data, t.dims, axis, start, count);
        item[name] = this.#build(t, t.type, s.data, s.dims);
      }
      results.push((single ? item[''] : item) as Out);
      start += count;
    }
    return results;
  }

  /** The axis of an output that `outputs` does not list. */
  #defaultOutputAxis(name: string): number | 'shared' {
    const spec = this.inputs[name];
    if (spec === undefined) return 0;
    if (typeof spec !== 'object') return spec;
    const axis = (spec as { outputAxis?: unknown }).outputAxis;
    return typeof axis === 'number' && Number.isInteger(axis) && axis >= 0 ? axis : 0;
  }

  /** What of key `name` must be equal for items to share a batch, starred where it may differ. */
  #signature(name: string, tensors: ReadonlyMap<string, TensorLike>): string {
    const t = tensors.get(name) as TensorLike;
    const spec = this.inputs[name] as KeyAxis;
    if (spec === 'shared') return signature(t);
    // A key's batcher decides (in its partition) which dims must match, so only dtype and rank count here.
    if (typeof spec === 'object') return signature(t, ...t.dims.keys());
    return signature(t, spec);
  }

  /** The name of the first shared key whose data differ between a and b, or undefined if none. */
  #sharedEqual(a: DictItem, b: DictItem): string | undefined {
    for (const name of this.#names) {
      if (this.inputs[name] !== 'shared') continue;
      const x = (a.tensors.get(name) as TensorLike).data;
      const y = (b.tensors.get(name) as TensorLike).data;
      if (x === y) continue;
      for (let i = 0; i < x.length; i++) {
        if (!Object.is(x[i], y[i])) return name;
      }
    }
    return undefined;
  }

  #read(item: unknown): DictItem {
    if (typeof item !== 'object' || item === null || Array.isArray(item) || ArrayBuffer.isView(item) || isTensorLike(item)) {
      throw new TensorInputError(WHERE, 'the request', `a record of tensors with keys ${this.#names.join(', ')}`, isTensorLike(item) ? `a single tensor (${signature(item)})` : describe(item));
    }
    const record = item as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (!(key in this.inputs)) {
        throw new TensorInputError(WHERE, inputLabel('record', key), `only the keys of \`inputs\` (${this.#names.join(', ')})`, `an unknown key ${JSON.stringify(key)}`);
      }
    }
    const tensors = new Map<string, CheckedTensor>();
    let rows = -1;
    let rowsFrom = '';
    for (const name of this.#names) {
      const label = inputLabel('record', name);
      if (!(name in record) || record[name] === undefined) throw new TensorInputError(WHERE, label, 'a tensor (it is listed in `inputs`)', 'no such key');
      const t = record[name];
      const fault = tensorFault(t);
      if (fault !== null) throw new TensorInputError(WHERE, label, fault.expected, fault.actual);
      const tensor = t as CheckedTensor;
      const spec = this.inputs[name] as KeyAxis;
      tensors.set(name, tensor);
      if (spec === 'shared') continue;
      let r: number;
      let counted: string;
      if (typeof spec === 'number') {
        if (tensor.dims.length <= spec) {
          throw new TensorInputError(WHERE, label, `a tensor of rank ${spec + 1} or more (batch axis ${spec})`, `shape ${formatShape(tensor.dims)}`);
        }
        r = tensor.dims[spec] as number;
        counted = `on axis ${spec}`;
      } else {
        r = keyRows(name, spec, tensor);
        counted = `(counted by its ${kindOf(spec)})`;
      }
      if (rows < 0) {
        rows = r;
        rowsFrom = `${label} has ${counted}`;
      } else if (r !== rows) {
        throw new TensorInputError(WHERE, label, `${rows} rows ${counted}, as ${rowsFrom}`, `shape ${formatShape(tensor.dims)} with ${r}`);
      }
    }
    return { tensors, rows, key: this.#names.map((name) => this.#signature(name, tensors)).join(' | ') };
  }
}
