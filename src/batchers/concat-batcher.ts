import type { Batcher, Merged, Partition } from '../core/batcher';
import { describe } from '../core/describe';
import { concatInto } from '../tensor/copy';
import { formatShape, tensorBuilder, type TensorFactory, type TensorLike } from '../tensor/tensor-like';
import { checkAxis, checkBoolean, checkKeys } from './options';
import { TensorInputError } from './tensor-input-error';
import { sliceAxis } from '../tensor/copy';
import { inputLabel, joinOutputs, readItem, rebuild, signature, splitOutput, type Layout, type ReadItem, type TensorInput } from './tensor-items';

/**
 * An expected shape, batch axis included; `-1` accepts any size on that axis.
 * @example `[-1, 3, 48, 192]`
 */
export type Shape = readonly number[];

/** Options of {@link ConcatBatcher}. */
export interface ConcatBatcherOptions {
  /**
   * The batch axis of the inputs: items are concatenated along it, and an item's row count is
   * its size on it (so an item may already hold several rows).
   * @default 0
   */
  axis?: number;
  /**
   * The batch axis of the batch function's outputs, along which they are cut back per item.
   * @default the same as `axis`
   */
  outputAxis?: number;
  /**
   * Shapes to enforce, batch axis included (`-1` = any size): a shape for a single-tensor item,
   * an array of shapes for a tuple, a record of shapes for a record (keys without a shape are
   * not checked). A request that does not match is rejected alone with a
   * {@link TensorInputError}. Without it, items of different shapes are not refused but run in
   * separate sub-batches, one per dtype and shape.
   * @default no shape check
   */
  shape?: Shape | readonly Shape[] | { readonly [name: string]: Shape };
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

/** What {@link ConcatBatcher.merge} hands to {@link ConcatBatcher.split}. */
export interface ConcatContext {
  /** Rows of each item, in order. */
  readonly rows: readonly number[];
  /** Their sum: the row count every output must have. */
  readonly total: number;
}

/**
 * Concatenates tensor requests along a batch axis into one tensor per input, and cuts every
 * output back by each request's row count. Requests may be a tensor, a tuple of tensors or a
 * record of tensors (several model inputs), and the batch function may return any of the three
 * (several outputs). Each input is copied once, into one preallocated buffer per batch input; each
 * caller gets its own copy of its rows, so the batch buffers can be freed.
 *
 * Requests whose dtypes or non-batch dims differ from each other run in separate sub-batches
 * (one model call per shape); a malformed request (not a tensor, data that does not fit its dims,
 * a rank too small for `axis`, tensors with different row counts, keys that differ from the
 * first request of the batch, a shape that breaks `shape`) is rejected alone with a
 * {@link TensorInputError}.
 *
 * @typeParam In - one request: a tensor, a tuple or a record of tensors.
 * @typeParam Out - one result, in the layout the batch function returns.
 *
 * @example
 * ```ts
 * import { InferenceSession, Tensor } from 'onnxruntime-node';
 * const session = await InferenceSession.create('classifier.onnx');
 * const host = new ModelHost(async (x: Tensor) => (await session.run({ x })).y as Tensor, {
 *   maxBatchSize: 32,
 *   batcher: new ConcatBatcher<Tensor>({ shape: [-1, 3, 48, 192] }),
 * });
 * const y = await host.inference(new Tensor('float32', pixels, [1, 3, 48, 192])); // y.dims [1, classes]
 * ```
 */
export class ConcatBatcher<In extends TensorInput = TensorLike, Out extends TensorInput = In>
  implements Batcher<In, Out, In, Out, ConcatContext>
{
  /** The batch axis of the inputs. */
  readonly axis: number;
  /** The batch axis of the outputs. */
  readonly outputAxis: number;
  readonly #shape: ConcatBatcherOptions['shape'];
  readonly #build: ReturnType<typeof tensorBuilder>;
  readonly #views: boolean;

  constructor(options: ConcatBatcherOptions = {}) {
    const where = 'ConcatBatcher';
    checkKeys(where, options, ['axis', 'outputAxis', 'shape', 'tensor', 'outputViews']);
    this.axis = checkAxis(where, 'axis', options.axis ?? 0);
    this.outputAxis = checkAxis(where, 'outputAxis', options.outputAxis ?? this.axis);
    if (options.shape !== undefined) checkShapeOption(where, options.shape);
    this.#shape = options.shape;
    this.#build = tensorBuilder(options.tensor, where);
    this.#views = checkBoolean(where, 'outputViews', options.outputViews);
  }

  /** The request's size on the batch axis. Throws a {@link TensorInputError} for a malformed request. */
  rows(item: In): number {
    return this.#read(item, undefined).rows;
  }

  /**
   * One group per distinct input signature (dtype and non-batch dims of every input), in order of
   * first appearance; malformed requests are rejected alone.
   */
  partition(items: readonly In[]): Partition {
    const groups = new Map<string, number[]>();
    const rejected: Array<{ index: number; error: Error }> = [];
    let reference: Layout | undefined;
    items.forEach((item, index) => {
      try {
        const read = this.#read(item, reference);
        reference ??= read.layout;
        const key = read.tensors.length === 1 ? signature(read.tensors[0] as TensorLike, this.axis) : read.tensors.map((t) => signature(t, this.axis)).join(' | ');
        const group = groups.get(key);
        if (group === undefined) groups.set(key, [index]);
        else group.push(index);
      } catch (error) {
        rejected.push({ index, error: error as Error });
      }
    });
    return { groups: [...groups.values()], rejected };
  }

  /**
   * Concatenates the items along `axis`, one buffer per input. Throws a {@link TensorInputError}
   * if they cannot share a batch (which `partition` prevents).
   */
  merge(items: readonly In[]): Merged<In, ConcatContext> {
    if (items.length === 0) throw new RangeError('ConcatBatcher: merge needs at least one item, got none');
    const read: ReadItem[] = [];
    for (const item of items) read.push(this.#read(item, read[0]?.layout));
    const first = read[0] as ReadItem;
    const tensors = first.tensors.map((t0, k) => {
      const want = signature(t0, this.axis);
      const blocks = read.map((r, i) => {
        const t = r.tensors[k] as TensorLike;
        if (signature(t, this.axis) !== want) {
          throw new TensorInputError(
            'ConcatBatcher',
            inputLabel(first.layout.kind, first.layout.names[k] ?? ''),
            `${want} like the first item of the batch (partition groups items by shape)`,
            `${signature(t, this.axis)} in item ${i}`,
          );
        }
        return t;
      });
      const { data, dims } = concatInto(t0.type, blocks, this.axis);
      return this.#build(t0, t0.type, data, dims);
    });
    const rows = read.map((r) => r.rows);
    return { batch: rebuild(first.layout, tensors) as In, ctx: { rows, total: rows.reduce((a, b) => a + b, 0) } };
  }

  /**
   * Cuts every output along `outputAxis` into each item's rows. Throws a
   * `BatchSizeMismatchError` when an output's row count is not the batch's.
   */
  split(output: Out, ctx: ConcatContext): ReadonlyArray<Out | Error> {
    return splitOutput(output, { where: 'ConcatBatcher', axis: this.outputAxis, rows: ctx.rows, total: ctx.total, build: this.#build, views: this.#views }) as Out[];
  }

  /**
   * Rows `start .. start + count` of a request along `axis`, every input cut the same way: a
   * request of its own, for a host with `splitOversize`.
   */
  sliceRows(item: In, start: number, count: number): In {
    const read = this.#read(item, undefined);
    if (!(Number.isInteger(start) && Number.isInteger(count) && start >= 0 && count >= 1 && start + count <= read.rows)) {
      throw new RangeError(`ConcatBatcher.sliceRows: expected rows within 0..${read.rows}, got ${start}..${start + count}`);
    }
    const parts = read.tensors.map((t) => {
      const s = sliceAxis(t.type, t.data, t.dims, this.axis, start, count);
      return this.#build(t, t.type, s.data, s.dims);
    });
    return rebuild(read.layout, parts) as In;
  }

  /** The results of a request's parts concatenated along `outputAxis`, in order (see {@link ConcatBatcher.sliceRows}). */
  joinRows(parts: readonly Out[]): Out {
    return joinOutputs('ConcatBatcher', parts, this.outputAxis, this.#build) as Out;
  }

  #read(item: unknown, reference: Layout | undefined): ReadItem {
    const read = readItem(item, { where: 'ConcatBatcher', axis: this.axis, kinds: ['tensor', 'tuple', 'record'], reference });
    if (this.#shape !== undefined) checkShapes('ConcatBatcher', read, this.#shape);
    return read;
  }
}

function isShape(value: unknown): value is Shape {
  return Array.isArray(value) && value.every((d) => Number.isInteger(d) && d >= -1);
}

function checkShapeOption(where: string, shape: unknown): void {
  const ok =
    isShape(shape) ||
    (Array.isArray(shape) && shape.every(isShape)) ||
    (typeof shape === 'object' && shape !== null && !Array.isArray(shape) && Object.values(shape).every(isShape));
  if (!ok) {
    throw new TypeError(
      `${where}: expected \`shape\` to be a shape (integers, -1 for any size), an array of shapes or a record of shapes, got ${describe(shape)}`,
    );
  }
}

function checkShapes(where: string, read: ReadItem, shape: NonNullable<ConcatBatcherOptions['shape']>): void {
  const { layout, tensors } = read;
  const names = layout.kind === 'tensor' ? [''] : layout.names;
  names.forEach((name, k) => {
    let want: Shape | undefined;
    if (layout.kind === 'record') want = Array.isArray(shape) ? undefined : (shape as Record<string, Shape>)[name];
    else if (layout.kind === 'tuple') want = isShape(shape) ? undefined : (shape as readonly Shape[])[k];
    else want = isShape(shape) ? shape : undefined;
    if (want === undefined) {
      // A single-tensor shape given for a tuple (or the reverse) is a configuration slip, not this request's fault alone.
      if (layout.kind !== 'record' && (isShape(shape) ? layout.kind === 'tuple' : layout.kind === 'tensor')) {
        throw new TensorInputError(where, 'the request', `the layout \`shape\` describes (${isShape(shape) ? 'a single tensor' : 'a tuple'})`, `a ${layout.kind}`);
      }
      return;
    }
    const dims = (tensors[k] as TensorLike).dims;
    if (dims.length !== want.length || want.some((d, a) => d !== -1 && d !== dims[a])) {
      throw new TensorInputError(where, inputLabel(layout.kind, name), `shape ${formatShape(want)}`, `shape ${formatShape(dims)}`);
    }
  });
}
