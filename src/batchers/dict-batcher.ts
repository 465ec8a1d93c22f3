import type { Batcher, Merged, Partition } from '../core/batcher';
import { describe } from '../core/describe';
import { BatchSizeMismatchError } from '../core/errors';
import { cloneData, concatInto, sliceAxis } from '../tensor/copy';
import { formatShape, isTensorLike, tensorBuilder, tensorFault, type CheckedTensor, type TensorFactory, type TensorLike } from '../tensor/tensor-like';
import { checkKeys } from './options';
import { TensorInputError } from './tensor-input-error';
import { inputLabel, signature, type TensorRecord } from './tensor-items';

/** How {@link DictBatcher} treats one key: its batch axis, or `'shared'` (not batched, equal across a sub-batch). */
export type KeyAxis = number | 'shared';

/** Options of {@link DictBatcher}. */
export interface DictBatcherOptions {
  /**
   * Every input key of an item with its batch axis, or `'shared'` for a value passed to the model
   * once per sub-batch (a sample rate, a config scalar). Items must have exactly these keys.
   */
  inputs: { readonly [name: string]: KeyAxis };
  /**
   * The batch axis (or `'shared'`) of each output key. When given, the batch function may only
   * return these keys.
   * @default the axis of the input of the same name, else 0
   */
  outputs?: { readonly [name: string]: KeyAxis };
  /**
   * Builds the batch's tensors and each item's output tensors.
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
  /** Dtype and dims of every key, the batch axes starred: items with equal keys may share a batch. */
  readonly key: string;
}

/**
 * Batches dict-of-tensor items, such as onnxruntime feeds objects, with a batch axis of its own per
 * key, axes other than 0 included, and keys marked `'shared'` passed through once per sub-batch.
 * Items whose shared values differ (dtype, dims or data), or whose batched keys differ in dtype or
 * non-batch dims, run in separate sub-batches. An item with an unknown or missing key, or whose
 * batched keys disagree on their row count, is rejected alone with a {@link TensorInputError}
 * naming the key. Outputs come back as a record cut per key along that key's output axis.
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
 */
export class DictBatcher<In extends TensorRecord = TensorRecord, Out extends TensorRecord = TensorRecord>
  implements Batcher<In, Out, In, Out, DictContext>
{
  /** The input keys and their batch axes. */
  readonly inputs: { readonly [name: string]: KeyAxis };
  /** The output keys and their batch axes, when given. */
  readonly outputs: { readonly [name: string]: KeyAxis } | undefined;
  readonly #names: readonly string[];
  readonly #build: ReturnType<typeof tensorBuilder>;

  constructor(options: DictBatcherOptions) {
    const where = 'DictBatcher';
    if (typeof options !== 'object' || options === null) throw new TypeError(`${where}: expected an options object with \`inputs\`, got ${describe(options)}`);
    checkKeys(where, options, ['inputs', 'outputs', 'tensor']);
    this.inputs = checkAxes(where, 'inputs', options.inputs);
    this.outputs = options.outputs === undefined ? undefined : checkAxes(where, 'outputs', options.outputs);
    this.#names = Object.keys(this.inputs);
    if (this.#names.every((n) => this.inputs[n] === 'shared')) throw new TypeError(`${where}: expected at least one batched key in \`inputs\` (an axis, not 'shared'), got ${JSON.stringify(this.inputs)}`);
    this.#build = tensorBuilder(options.tensor, where);
  }

  /** The item's row count: the size of its batched keys on their axes. Throws a {@link TensorInputError} for a malformed item. */
  rows(item: In): number {
    return this.#read(item).rows;
  }

  /** One group per distinct set of shapes and shared values; malformed items rejected alone. */
  partition(items: readonly In[]): Partition {
    const groups: Array<{ first: DictItem; indexes: number[] }> = [];
    const rejected: Array<{ index: number; error: Error }> = [];
    items.forEach((item, index) => {
      let read: DictItem;
      try {
        read = this.#read(item);
      } catch (error) {
        rejected.push({ index, error: error as Error });
        return;
      }
      const group = groups.find((g) => g.first.key === read.key && this.#sharedEqual(g.first, read) === undefined);
      if (group === undefined) groups.push({ first: read, indexes: [index] });
      else group.indexes.push(index);
    });
    return { groups: groups.map((g) => g.indexes), rejected };
  }

  /** Concatenates each batched key along its axis; shared keys are passed once, from the first item. */
  merge(items: readonly In[]): Merged<In, DictContext> {
    if (items.length === 0) throw new RangeError('DictBatcher: merge needs at least one item, got none');
    const read = items.map((item) => this.#read(item));
    const first = read[0] as DictItem;
    read.forEach((r, i) => {
      if (r.key !== first.key) {
        const name = this.#names.find((n) => signature(r.tensors.get(n) as TensorLike, this.#free(n)) !== signature(first.tensors.get(n) as TensorLike, this.#free(n))) as string;
        throw new TensorInputError('DictBatcher', inputLabel('record', name), `${signature(first.tensors.get(name) as TensorLike, this.#free(name))} like the first item of the batch (partition groups items by shape)`, `${signature(r.tensors.get(name) as TensorLike, this.#free(name))} in item ${i}`);
      }
      const differs = this.#sharedEqual(first, r);
      if (differs !== undefined) {
        throw new TensorInputError('DictBatcher', inputLabel('record', differs), 'the same shared value as the first item of the batch (partition groups items by shared values)', `a different value in item ${i}`);
      }
    });
    const batch: Record<string, TensorLike> = {};
    for (const name of this.#names) {
      const axis = this.inputs[name] as KeyAxis;
      const t0 = first.tensors.get(name) as CheckedTensor;
      if (axis === 'shared') {
        batch[name] = t0;
        continue;
      }
      const { data, dims } = concatInto(t0.type, read.map((r) => r.tensors.get(name) as TensorLike), axis);
      batch[name] = this.#build(t0, t0.type, data, dims);
    }
    const rows = read.map((r) => r.rows);
    return { batch: batch as unknown as In, ctx: { rows, total: rows.reduce((a, b) => a + b, 0) } };
  }

  /**
   * Cuts each batched output along its axis into every item's rows, and gives each item its own
   * copy of shared outputs. Throws a `BatchSizeMismatchError` when a batched output's row count is
   * not the batch's.
   */
  split(output: Out, ctx: DictContext): ReadonlyArray<Out | Error> {
    const single = isTensorLike(output);
    if (!single && (typeof output !== 'object' || output === null || Array.isArray(output))) {
      throw new TypeError(`DictBatcher: the batch function must return a record of tensors (or one tensor) with ${ctx.total} rows; it returned ${describe(output)}`);
    }
    const entries: Array<[string, CheckedTensor, KeyAxis]> = ((single ? [['', output]] : Object.entries(output)) as Array<[string, unknown]>).map(([name, t]) => {
      const label = single ? 'output' : `output ${JSON.stringify(name)}`;
      const fault = tensorFault(t);
      if (fault !== null) throw new TypeError(`DictBatcher: the batch function's ${label}: expected ${fault.expected}, got ${fault.actual}`);
      let axis: KeyAxis | undefined = this.outputs?.[name];
      if (axis === undefined) {
        if (this.outputs !== undefined && !single) {
          throw new TypeError(`DictBatcher: the batch function returned ${label}, which is not among \`outputs\` (${Object.keys(this.outputs).join(', ')}); add it with its batch axis or 'shared'`);
        }
        axis = this.inputs[name] ?? 0;
      }
      const key: KeyAxis = axis;
      const dims = (t as TensorLike).dims;
      if (key !== 'shared') {
        const got = dims.length > key ? dims[key] : undefined;
        if (got !== ctx.total) {
          throw new BatchSizeMismatchError(
            `DictBatcher: the batch function's ${label} must have one row per input row on axis ${key}: expected ${ctx.total} rows (${ctx.rows.length} requests), ` +
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

  #free(name: string): number {
    const axis = this.inputs[name];
    return axis === 'shared' || axis === undefined ? -1 : axis;
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
    const where = 'DictBatcher';
    if (typeof item !== 'object' || item === null || Array.isArray(item) || ArrayBuffer.isView(item) || isTensorLike(item)) {
      throw new TensorInputError(where, 'the request', `a record of tensors with keys ${this.#names.join(', ')}`, isTensorLike(item) ? `a single tensor (${signature(item)})` : describe(item));
    }
    const record = item as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (!(key in this.inputs)) {
        throw new TensorInputError(where, inputLabel('record', key), `only the keys of \`inputs\` (${this.#names.join(', ')})`, `an unknown key ${JSON.stringify(key)}`);
      }
    }
    const tensors = new Map<string, CheckedTensor>();
    let rows = -1;
    let rowsFrom = '';
    const parts: string[] = [];
    for (const name of this.#names) {
      const label = inputLabel('record', name);
      if (!(name in record) || record[name] === undefined) throw new TensorInputError(where, label, 'a tensor (it is listed in `inputs`)', 'no such key');
      const t = record[name];
      const fault = tensorFault(t);
      if (fault !== null) throw new TensorInputError(where, label, fault.expected, fault.actual);
      const tensor = t as CheckedTensor;
      const axis = this.inputs[name] as KeyAxis;
      if (axis !== 'shared') {
        if (tensor.dims.length <= axis) {
          throw new TensorInputError(where, label, `a tensor of rank ${axis + 1} or more (batch axis ${axis})`, `shape ${formatShape(tensor.dims)}`);
        }
        const r = tensor.dims[axis] as number;
        if (rows < 0) {
          rows = r;
          rowsFrom = `${inputLabel('record', name)} has on axis ${this.inputs[name]}`;
        } else if (r !== rows) {
          throw new TensorInputError(where, label, `${rows} rows on axis ${axis}, as ${rowsFrom}`, `shape ${formatShape(tensor.dims)} with ${r}`);
        }
      }
      tensors.set(name, tensor);
      parts.push(signature(tensor, this.#free(name)));
    }
    return { tensors, rows, key: parts.join(' | ') };
  }
}

function checkAxes(where: string, option: string, value: unknown): { readonly [name: string]: KeyAxis } {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new TypeError(`${where}: expected \`${option}\` to be a non-empty record of key → batch axis or 'shared', got ${describe(value)}`);
  }
  for (const [name, axis] of Object.entries(value)) {
    if (axis !== 'shared' && !(typeof axis === 'number' && Number.isInteger(axis) && axis >= 0)) {
      throw new TypeError(`${where}: expected \`${option}.${name}\` to be a non-negative integer axis or 'shared', got ${describe(axis)}`);
    }
  }
  return { ...(value as Record<string, KeyAxis>) };
}
