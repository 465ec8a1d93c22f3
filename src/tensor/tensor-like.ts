import { describe } from '../core/describe';
import { dataKind, dataMatchesType, DTYPES, isTensorType, type TensorData, type TensorType } from './dtypes';

/**
 * Anything shaped like onnxruntime's `Tensor`: an element type, a flat row-major data array and
 * the dimensions. onnxruntime tensors, plain objects and other libraries' tensors all fit, so the
 * core never imports onnxruntime.
 *
 * @example
 * ```ts
 * const t: TensorLike = { type: 'float32', data: new Float32Array(6), dims: [2, 3] };
 * ```
 */
export interface TensorLike {
  /** The element type, e.g. `'float32'`, `'int64'`, `'string'` (see {@link TensorType}). */
  readonly type: string;
  /** The elements in row-major order; its array type must match `type`. */
  readonly data: TensorData;
  /** The size of each axis; the product is `data.length`. */
  readonly dims: readonly number[];
}

/**
 * Builds the tensors a batcher produces (batches from inputs, per-item slices from outputs).
 * Its signature is onnxruntime's `new Tensor(type, data, dims)`.
 *
 * @example
 * ```ts
 * import { Tensor } from 'onnxruntime-node';
 * const tensor: TensorFactory<Tensor> = (type, data, dims) => new Tensor(type as Tensor.Type, data, dims);
 * ```
 */
export type TensorFactory<T extends TensorLike = TensorLike> = (type: string, data: TensorData, dims: readonly number[]) => T;

/**
 * A tensor that passed {@link checkTensor}: its type is known and its data fits its dims.
 * @internal
 */
export interface CheckedTensor extends TensorLike {
  readonly type: TensorType;
}

/**
 * True when `value` has the three fields of a tensor (without checking that they agree).
 * @example
 * ```ts
 * isTensorLike({ type: 'int64', data: new BigInt64Array(2), dims: [1, 2] }); // true
 * isTensorLike({ input_ids: ids }); // false: a record of tensors
 * ```
 */
export function isTensorLike(value: unknown): value is TensorLike {
  if (typeof value !== 'object' || value === null) return false;
  const t = value as Partial<TensorLike>;
  return typeof t.type === 'string' && Array.isArray(t.dims) && (ArrayBuffer.isView(t.data) || Array.isArray(t.data));
}

/** `[2, 3, 4]`; the notation every message uses for shapes. @internal */
export function formatShape(dims: readonly number[]): string {
  return `[${dims.map((d) => (d < 0 ? '*' : String(d))).join(', ')}]`;
}

/** The number of elements of a tensor with these dims. @internal */
export function sizeOf(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** What {@link tensorFault} found wrong: the expectation and what came instead. @internal */
export interface Fault {
  readonly expected: string;
  readonly actual: string;
}

/**
 * Checks that `value` is a tensor microbatch can copy: `null` when it is, else what was expected
 * and what came (the caller adds which input it was).
 * @internal
 */
export function tensorFault(value: unknown): Fault | null {
  if (!isTensorLike(value)) {
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && !ArrayBuffer.isView(value)) {
      const t = value as Record<string, unknown>;
      const missing = ['type', 'data', 'dims'].filter((k) => !(k in t));
      if (missing.length > 0) return { expected: 'a tensor { type, data, dims }', actual: `${describe(value)} without ${missing.join(', ')}` };
      return {
        expected: 'a tensor { type: string, data: typed array or string[], dims: number[] }',
        actual: `type ${describe(t.type)}, data ${describe(t.data)}, dims ${describe(t.dims)}`,
      };
    }
    return { expected: 'a tensor { type, data, dims }', actual: describe(value) };
  }
  if (!isTensorType(value.type)) {
    return { expected: `a tensor type among ${TENSOR_TYPE_LIST}`, actual: `type ${JSON.stringify(value.type)}` };
  }
  for (const d of value.dims) {
    if (!Number.isInteger(d) || d < 0) return { expected: 'dims of non-negative integers', actual: `dims ${JSON.stringify(value.dims)}` };
  }
  if (!dataMatchesType(value.type, value.data)) {
    const want = DTYPES[value.type].tags.map((t) => t.slice(8, -1)).join(' or ');
    return { expected: `${value.type} data in ${want === 'Array' ? 'a string[]' : article(want)}`, actual: article(dataKind(value.data)) };
  }
  const size = sizeOf(value.dims);
  if (value.data.length !== size) {
    return { expected: `${size} elements for dims ${formatShape(value.dims)}`, actual: `data of length ${value.data.length}` };
  }
  if (value.type === 'string') {
    const bad = (value.data as unknown[]).findIndex((s) => typeof s !== 'string');
    if (bad >= 0) return { expected: 'string data', actual: `${describe((value.data as unknown[])[bad])} at element ${bad}` };
  }
  return null;
}

function article(noun: string): string {
  return `${/^[AEIOU]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

const TENSOR_TYPE_LIST = Object.keys(DTYPES).join(', ');

/**
 * Builds output tensors "like" a given tensor: when `sample` is an instance of a class (an
 * onnxruntime `Tensor`, say), a new instance of that class through `new ctor(type, data, dims)`,
 * which is onnxruntime's constructor signature; otherwise a plain `{ type, data, dims }` object.
 * That keeps onnxruntime tensors in, onnxruntime tensors out without importing onnxruntime.
 * @internal
 */
export function makeTensorLike(sample: unknown, type: string, data: TensorData, dims: readonly number[]): TensorLike {
  const proto = typeof sample === 'object' && sample !== null ? (Object.getPrototypeOf(sample) as object | null) : null;
  const Ctor = proto?.constructor as (new (t: string, d: TensorData, s: readonly number[]) => TensorLike) | undefined;
  // The name test also catches plain objects from another realm, whose `Object` is not ours.
  if (typeof Ctor === 'function' && (Ctor as unknown) !== Object && Ctor.name !== 'Object') return new Ctor(type, data, dims);
  return { type, data, dims };
}

/**
 * The factory a batcher uses: the user's `tensor` option, or {@link makeTensorLike} modelled on
 * the tensor the new one is made from.
 * @internal
 */
export function tensorBuilder(option: TensorFactory | undefined, where: string): (sample: unknown, type: string, data: TensorData, dims: readonly number[]) => TensorLike {
  if (option === undefined) return makeTensorLike;
  if (typeof option !== 'function') {
    throw new TypeError(`${where}: expected \`tensor\` to be a function (type, data, dims) => tensor, got ${describe(option)}`);
  }
  return (_sample, type, data, dims) => option(type, data, dims);
}
