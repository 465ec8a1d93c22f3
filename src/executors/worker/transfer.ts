import { isError } from '../../core/describe';
import { reviveError, serializeError, type WireError } from './wire-error';

/**
 * Preparing values to cross a thread boundary (`postMessage`) and restoring them on the other side.
 *
 * Structured clone already copies typed arrays, plain objects, arrays, Maps and Dates. What it gets
 * wrong for us, and what this module fixes:
 * - class instances lose their class: an onnxruntime `Tensor` arrives as a plain object *without*
 *   `data` (a prototype getter), so tensors cross as tagged `{ type, data, dims }` records and are
 *   re-created as tensors on arrival;
 * - errors lose custom names and properties, so they cross as {@link WireError} data;
 * - typed arrays are copied: their buffers can instead be *moved* with a transfer list.
 */

/** Marks a tensor that was a class instance (an onnxruntime `Tensor`) on the sending side. */
const TENSOR_TAG = '__microbatchTensor';
/** Marks an error (a batch's per-item `Error` result, for example). */
const ERROR_TAG = '__microbatchError';

/** How deep the walk looks for tensors, errors and buffers; batches are shallow (item → tensor → data). */
const MAX_DEPTH = 6;

/**
 * Builds a tensor on the receiving side from a tensor that was a class instance on the sending
 * side. Receives the sending class's name (`'Tensor'` for onnxruntime).
 * @internal
 */
export type TensorReviver = (className: string, type: string, data: unknown, dims: readonly number[]) => unknown;

/** A value ready for `postMessage`, with the buffers to move. @internal */
export interface Encoded {
  readonly value: unknown;
  readonly transferList: ArrayBuffer[];
}

interface TensorFields {
  readonly type: string;
  readonly data: ArrayBufferView | unknown[];
  readonly dims: readonly number[];
}

function tensorFields(value: object): TensorFields | undefined {
  const t = value as Partial<TensorFields>;
  // Reading `data` through the getter is the point: onnxruntime's Tensor keeps it behind one.
  if (typeof t.type !== 'string' || !Array.isArray(t.dims)) return undefined;
  const data = t.data;
  return ArrayBuffer.isView(data) || Array.isArray(data) ? { type: t.type, data, dims: t.dims } : undefined;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || proto === Object.prototype || (proto as { constructor?: { name?: string } }).constructor?.name === 'Object';
}

/**
 * Prepares `value` for `postMessage`. With `transfer`, the ArrayBuffers under its typed arrays are
 * listed for moving (never a SharedArrayBuffer, which is shared anyway, and each buffer once).
 * Moving detaches them on this side, so only pass `transfer` for values this side is done with.
 * @internal
 */
export function encodeForPost(value: unknown, transfer: boolean): Encoded {
  const buffers = new Set<ArrayBuffer>();
  const add = (view: ArrayBufferView): void => {
    const b = view.buffer;
    // A detached or empty buffer cannot (or need not) move; a SharedArrayBuffer must not.
    if (transfer && b instanceof ArrayBuffer && b.byteLength > 0) buffers.add(b);
  };
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (ArrayBuffer.isView(v)) {
      add(v);
      return v;
    }
    if (isError(v)) return { [ERROR_TAG]: serializeError(v) };
    if (depth >= MAX_DEPTH) return v;
    if (Array.isArray(v)) {
      // Arrays of numbers or strings need no walk (and no copy).
      if (!v.some((e) => typeof e === 'object' && e !== null)) return v;
      return v.map((e) => walk(e, depth + 1));
    }
    if (!isPlain(v)) {
      const t = tensorFields(v);
      if (t === undefined) return v; // Map, Date...: structured clone handles them
      if (ArrayBuffer.isView(t.data)) add(t.data);
      const name = (Object.getPrototypeOf(v) as { constructor?: { name?: string } }).constructor?.name ?? 'Tensor';
      return { [TENSOR_TAG]: name, type: t.type, data: t.data, dims: [...t.dims] };
    }
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries(v)) out[k] = walk(e, depth + 1);
    return out;
  };
  const encoded = walk(value, 0);
  return { value: encoded, transferList: [...buffers] };
}

/**
 * Restores a value made by {@link encodeForPost} after it crossed: errors become Errors again,
 * tagged tensors are rebuilt with `reviveTensor`. Tensor data that lives in a SharedArrayBuffer is
 * copied once into a regular buffer, because onnxruntime rejects shared memory.
 * The value is fresh from structured clone, so it is changed in place.
 * @internal
 */
export function decodeFromPost(value: unknown, reviveTensor: TensorReviver): unknown {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v !== 'object' || v === null || ArrayBuffer.isView(v) || depth > MAX_DEPTH) return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const e: unknown = v[i];
        if (typeof e === 'object' && e !== null) v[i] = walk(e, depth + 1);
      }
      return v;
    }
    if (!isPlain(v)) return v;
    const rec = v as Record<string, unknown>;
    if (ERROR_TAG in rec) return reviveError(rec[ERROR_TAG] as WireError);
    const t = tensorFields(rec);
    if (t !== undefined) {
      const data = unshare(t.data);
      if (TENSOR_TAG in rec) return reviveTensor(String(rec[TENSOR_TAG]), t.type, data, t.dims);
      if (data !== t.data) rec.data = data;
      return rec;
    }
    for (const k of Object.keys(rec)) rec[k] = walk(rec[k], depth + 1);
    return rec;
  };
  return walk(value, 0);
}

function unshare(data: ArrayBufferView | unknown[]): ArrayBufferView | unknown[] {
  if (!ArrayBuffer.isView(data) || data.buffer instanceof ArrayBuffer) return data;
  // A typed array over shared memory: `slice` copies into a fresh, regular ArrayBuffer.
  return (data as unknown as { slice(): ArrayBufferView }).slice();
}

let ortTensor: (new (type: string, data: unknown, dims: readonly number[]) => unknown) | null | undefined;

/**
 * The default {@link TensorReviver}: a tensor that was an onnxruntime `Tensor` becomes one again
 * when onnxruntime-node can be loaded here (it is an optional peer dependency, required lazily and
 * only when such a tensor arrives); anything else becomes a plain `{ type, data, dims }` object,
 * which every microbatch tensor batcher accepts.
 * @internal
 */
export const reviveTensorDefault: TensorReviver = (className, type, data, dims) => {
  if (className === 'Tensor') {
    if (ortTensor === undefined) {
      try {
        // Lazy on purpose: see above. Cached, including the failure.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        ortTensor = (require('onnxruntime-node') as { Tensor: typeof ortTensor }).Tensor ?? null;
      } catch {
        ortTensor = null;
      }
    }
    if (ortTensor !== null && ortTensor !== undefined) return new ortTensor(type, data, dims);
  }
  return { type, data, dims };
};
