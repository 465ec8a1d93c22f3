import { describe } from '../core/describe';
import { BatchSizeMismatchError } from '../core/errors';
import { concatInto, sliceAxis } from '../tensor/copy';
import type { TensorData, TensorType } from '../tensor/dtypes';
import { formatShape, isTensorLike, tensorFault, type CheckedTensor, type TensorLike } from '../tensor/tensor-like';
import { TensorInputError } from './tensor-input-error';

/** A record of named tensors, such as an onnxruntime feeds object or `session.run()` result. */
export type TensorRecord<T extends TensorLike = TensorLike> = { readonly [name: string]: T };

/**
 * What a tensor batcher takes per request and gives back: one tensor, a tuple of tensors (several
 * inputs by position) or a record of tensors (several inputs by name).
 */
export type TensorInput<T extends TensorLike = TensorLike> = T | readonly T[] | TensorRecord<T>;

/**
 * How an item holds its tensors. Items of one batch must share it, and batches and outputs are
 * rebuilt with it.
 * @internal
 */
export interface Layout {
  readonly kind: 'tensor' | 'tuple' | 'record';
  /** Tuple positions as strings, or record keys in the first item's order; `[]` for a tensor. */
  readonly names: readonly string[];
}

/** How messages name an input: `the input`, `input[1]`, `input "mask"`. @internal */
export function inputLabel(kind: Layout['kind'], name: string): string {
  if (kind === 'tensor') return 'the input';
  return kind === 'tuple' ? `input[${name}]` : `input ${JSON.stringify(name)}`;
}

function describeLayout(layout: Layout): string {
  if (layout.kind === 'tensor') return 'a single tensor';
  if (layout.kind === 'tuple') return `a tuple of ${layout.names.length} tensors`;
  return `a record with keys ${layout.names.map((k) => JSON.stringify(k)).join(', ')}`;
}

/** The layout of every single-tensor item: shared, since layouts are never changed. */
const TENSOR_LAYOUT: Layout = Object.freeze({ kind: 'tensor', names: Object.freeze([]) as readonly string[] });

/**
 * The layout of `value`, or `undefined` when it is none of tensor, array or plain object. A tensor
 * wins over a record, so a record is never mistaken for a tensor unless it has all three fields.
 * @internal
 */
function layoutOf(value: unknown): Layout | undefined {
  if (isTensorLike(value)) return TENSOR_LAYOUT;
  if (Array.isArray(value)) return { kind: 'tuple', names: value.map((_, i) => String(i)) };
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) return { kind: 'record', names: Object.keys(value) };
  return undefined;
}

/** The tensors of `value` in `layout`'s order. @internal */
function tensorsIn(value: unknown, layout: Layout): unknown[] {
  if (layout.kind === 'tensor') return [value];
  return layout.names.map((n) => (value as Record<string, unknown>)[n]);
}

/** The inverse of {@link tensorsIn}. @internal */
export function rebuild(layout: Layout, tensors: readonly unknown[]): unknown {
  if (layout.kind === 'tensor') return tensors[0];
  if (layout.kind === 'tuple') return [...tensors];
  const out: Record<string, unknown> = {};
  layout.names.forEach((n, i) => (out[n] = tensors[i]));
  return out;
}

/** One validated item. @internal */
export interface ReadItem {
  readonly layout: Layout;
  readonly tensors: readonly CheckedTensor[];
  /** dims[axis] of its tensors (equal across them). */
  readonly rows: number;
}

/** What {@link readItem} checks besides the tensors themselves. @internal */
export interface ReadOptions {
  /** Batcher name for messages. */
  readonly where: string;
  /** The batch axis: every tensor needs rank > axis and the same size on it. */
  readonly axis: number;
  /** Layouts the batcher accepts. */
  readonly kinds: ReadonlyArray<Layout['kind']>;
  /** The layout of the batch's first item: others must match it. */
  readonly reference?: Layout | undefined;
}

/**
 * Validates one item: its layout (against the reference item's, naming missing and unknown keys),
 * each tensor, each rank against the batch axis, and that all its tensors have the same number of
 * rows. Throws {@link TensorInputError}, which rejects this item only.
 * @internal
 */
export function readItem(item: unknown, o: ReadOptions): ReadItem {
  const layout = layoutOf(item);
  if (layout === undefined || !o.kinds.includes(layout.kind)) {
    const shapes = o.kinds.map((k) => (k === 'tensor' ? 'a tensor' : k === 'tuple' ? 'an array of tensors' : 'a record of tensors')).join(' or ');
    throw new TensorInputError(o.where, 'the request', shapes, describe(item));
  }
  const ref = o.reference;
  if (ref !== undefined) {
    if (ref.kind !== layout.kind || (ref.kind === 'tuple' && ref.names.length !== layout.names.length)) {
      throw new TensorInputError(o.where, 'the request', `${describeLayout(ref)} like the first item of the batch`, describeLayout(layout));
    }
    if (ref.kind === 'record') {
      const unknown = layout.names.filter((k) => !ref.names.includes(k));
      if (unknown.length > 0) {
        throw new TensorInputError(o.where, inputLabel('record', unknown[0] as string), `only the keys of the first item of the batch (${ref.names.join(', ')})`, `an unknown key ${JSON.stringify(unknown[0])}`);
      }
      const missing = ref.names.filter((k) => !layout.names.includes(k));
      if (missing.length > 0) {
        throw new TensorInputError(o.where, inputLabel('record', missing[0] as string), `a tensor, as in the first item of the batch (keys ${ref.names.join(', ')})`, 'no such key');
      }
    }
  }
  const use = ref ?? layout;
  if (use.kind !== 'tensor' && use.names.length === 0) {
    throw new TensorInputError(o.where, 'the request', 'at least one tensor', `an empty ${use.kind}`);
  }
  const raw = tensorsIn(item, use);
  // A plain loop with labels built only on failure: this runs for every request, several times.
  const label = (i: number): string => inputLabel(use.kind, use.kind === 'tensor' ? '' : (use.names[i] as string));
  let rows = -1;
  for (let i = 0; i < raw.length; i++) {
    const t = raw[i];
    const fault = tensorFault(t);
    if (fault !== null) throw new TensorInputError(o.where, label(i), fault.expected, fault.actual);
    const dims = (t as TensorLike).dims;
    if (dims.length <= o.axis) {
      throw new TensorInputError(o.where, label(i), `a tensor of rank ${o.axis + 1} or more (batch axis ${o.axis})`, `shape ${formatShape(dims)}`);
    }
    const r = dims[o.axis] as number;
    if (rows < 0) rows = r;
    else if (r !== rows) {
      throw new TensorInputError(o.where, label(i), `${rows} rows on axis ${o.axis}, as ${label(0)} has`, `shape ${formatShape(dims)} with ${r}`);
    }
  }
  return { layout: use, tensors: raw as CheckedTensor[], rows };
}

/** `float32 [*, 3, 48]`: a tensor's dtype and dims with the free axes starred. @internal */
export function signature(t: TensorLike, ...free: number[]): string {
  // Hand-built rather than map/join: partition keys every request by it.
  let s = `${t.type} [`;
  const dims = t.dims;
  for (let a = 0; a < dims.length; a++) {
    if (a > 0) s += ', ';
    const d = dims[a] as number;
    s += free.includes(a) || d < 0 ? '*' : String(d);
  }
  return `${s}]`;
}

/** What {@link splitOutput} needs to cut a batch output back per item. @internal */
export interface SplitPlan {
  readonly where: string;
  /** The batch axis of the outputs. */
  readonly axis: number;
  /** Rows of each item, in order. */
  readonly rows: readonly number[];
  /** Their sum; every output must have exactly this many rows. */
  readonly total: number;
  readonly build: (sample: unknown, type: string, data: TensorData, dims: readonly number[]) => TensorLike;
  /** Optionally trims item `i`'s slice of output `name` along another axis (un-padding). */
  readonly trim?: (item: number, name: string, dims: readonly number[]) => { axis: number; keep: number } | undefined;
  /** Hand out views into the output where its rows are contiguous (see `outputViews`). */
  readonly views?: boolean;
}

/**
 * Validates the batch function's output (a tensor, a tuple or a record of tensors), checks each
 * output has the batch's row count on the batch axis, and copies every item's rows out into
 * tensors of its own, in the output's layout.
 * @internal
 */
export function splitOutput(output: unknown, p: SplitPlan): unknown[] {
  const layout = layoutOf(output);
  if (layout === undefined || (layout.kind !== 'tensor' && layout.names.length === 0)) {
    throw new TypeError(`${p.where}: the batch function must return a tensor, an array or a record of tensors with ${p.total} rows on axis ${p.axis}; it returned ${describe(output)}`);
  }
  const names = layout.kind === 'tensor' ? [''] : layout.names;
  const outs = tensorsIn(output, layout) as CheckedTensor[];
  outs.forEach((t, i) => {
    const label = layout.kind === 'tensor' ? 'output' : layout.kind === 'tuple' ? `output[${names[i]}]` : `output ${JSON.stringify(names[i])}`;
    const fault = tensorFault(t);
    if (fault !== null) throw new TypeError(`${p.where}: the batch function's ${label}: expected ${fault.expected}, got ${fault.actual}`);
    const got = t.dims.length > p.axis ? (t.dims[p.axis] as number) : undefined;
    if (got !== p.total) {
      throw new BatchSizeMismatchError(
        `${p.where}: the batch function's ${label} must have one row per input row on axis ${p.axis}: ` +
          `expected ${p.total} rows (${p.rows.length} requests), got ${got === undefined ? `shape ${formatShape(t.dims)} with no axis ${p.axis}` : `${got} (shape ${formatShape(t.dims)})`}`,
        p.total,
        got ?? 0,
      );
    }
  });
  const results: unknown[] = [];
  let start = 0;
  for (let i = 0; i < p.rows.length; i++) {
    const count = p.rows[i] as number;
    const parts = outs.map((t, k) => {
      const trim = p.trim?.(i, names[k] as string, t.dims);
      const s = p.views === true && trim === undefined ? (rowView(t.data, t.dims, p.axis, start, count) ?? sliceAxis(t.type, t.data, t.dims, p.axis, start, count)) : sliceAxis(t.type, t.data, t.dims, p.axis, start, count, trim);
      return p.build(t, t.type, s.data, s.dims);
    });
    results.push(rebuild(layout, parts));
    start += count;
  }
  return results;
}

/**
 * Rows `start .. start + count` along `axis` as a view on `data`, when they are one contiguous run
 * (typed-array data, every axis before `axis` of size 1); `undefined` otherwise.
 */
function rowView(data: TensorData, dims: readonly number[], axis: number, start: number, count: number): { data: TensorData; dims: number[] } | undefined {
  if (Array.isArray(data) || !ArrayBuffer.isView(data)) return undefined;
  for (let a = 0; a < axis; a++) if (dims[a] !== 1) return undefined;
  let stride = 1;
  for (let a = axis + 1; a < dims.length; a++) stride *= dims[a] as number;
  const out = [...dims];
  out[axis] = count;
  return { data: (data as Float32Array).subarray(start * stride, (start + count) * stride) as unknown as TensorData, dims: out };
}

/**
 * Joins the outputs of one request's parts (each a tensor, a tuple or a record of tensors, in the
 * same layout) by concatenating every output along `axis`, in order.
 * @internal
 */
export function joinOutputs(where: string, parts: readonly unknown[], axis: number, build: SplitPlan['build']): unknown {
  const first = parts[0];
  const layout = layoutOf(first);
  if (layout === undefined || parts.length === 0) throw new TypeError(`${where}: cannot join the parts of a request: expected tensors, got ${describe(first)}`);
  const all = parts.map((p) => tensorsIn(p, layout) as TensorLike[]);
  const joined = (all[0] as TensorLike[]).map((t0, k) => {
    const { data, dims } = concatInto(t0.type as TensorType, all.map((ts) => ts[k] as TensorLike), axis);
    return build(t0, t0.type, data, dims);
  });
  return rebuild(layout, joined);
}
