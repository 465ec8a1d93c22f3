/**
 * The typed arrays a tensor's `data` can be, one per numeric dtype of onnxruntime.
 * `float16` is carried as raw bits in a `Uint16Array` (or a `Float16Array` where the runtime has one).
 */
export type TypedArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint8ClampedArray
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

/** What a tensor's `data` may hold: a typed array, or an array of strings for `string` tensors. */
export type TensorData = TypedArray | string[];

/** The element types microbatch can batch: onnxruntime's dtypes that live in CPU memory. */
export type TensorType =
  | 'float32'
  | 'float64'
  | 'float16'
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'uint8'
  | 'uint16'
  | 'uint32'
  | 'uint64'
  | 'bool'
  | 'string';

/** One row of the dtype table. @internal */
interface DtypeInfo {
  /**
   * `Object.prototype.toString` tags the data may carry. Tags rather than `instanceof`, because
   * typed arrays made in another realm (a worker, jest's sandbox, onnxruntime's native side) fail
   * `instanceof` against this realm's constructors.
   */
  readonly tags: readonly string[];
  /**
   * This realm's constructor of the usual data array: an `instanceof` test against it is the fast
   * path (the tag read goes through a `Symbol.toStringTag` getter and costs several times more).
   */
  readonly ctor: abstract new (...args: never[]) => unknown;
  /** Constructor used when no input is at hand to copy the array type from. */
  readonly make: (length: number) => TensorData;
  /** The zero of the type, used for padding when no pad value is given. */
  readonly zero: number | bigint | string;
  /** Whether elements are bigints (so pad values must be converted). */
  readonly bigint: boolean;
}

const float16Tags = ['[object Uint16Array]', '[object Float16Array]'];

/**
 * The dtype table: for each tensor type, the data array it must carry. Matches onnxruntime's
 * `Tensor` (`bool` as `Uint8Array`, `int64` as `BigInt64Array`, `float16` as `Uint16Array` bits).
 * @internal
 */
export const DTYPES: Readonly<Record<TensorType, DtypeInfo>> = {
  float32: { tags: ['[object Float32Array]'], ctor: Float32Array, make: (n) => new Float32Array(n), zero: 0, bigint: false },
  float64: { tags: ['[object Float64Array]'], ctor: Float64Array, make: (n) => new Float64Array(n), zero: 0, bigint: false },
  float16: { tags: float16Tags, ctor: Uint16Array, make: (n) => new Uint16Array(n), zero: 0, bigint: false },
  int8: { tags: ['[object Int8Array]'], ctor: Int8Array, make: (n) => new Int8Array(n), zero: 0, bigint: false },
  int16: { tags: ['[object Int16Array]'], ctor: Int16Array, make: (n) => new Int16Array(n), zero: 0, bigint: false },
  int32: { tags: ['[object Int32Array]'], ctor: Int32Array, make: (n) => new Int32Array(n), zero: 0, bigint: false },
  int64: { tags: ['[object BigInt64Array]'], ctor: BigInt64Array, make: (n) => new BigInt64Array(n), zero: 0n, bigint: true },
  uint8: { tags: ['[object Uint8Array]', '[object Uint8ClampedArray]'], ctor: Uint8Array, make: (n) => new Uint8Array(n), zero: 0, bigint: false },
  uint16: { tags: ['[object Uint16Array]'], ctor: Uint16Array, make: (n) => new Uint16Array(n), zero: 0, bigint: false },
  uint32: { tags: ['[object Uint32Array]'], ctor: Uint32Array, make: (n) => new Uint32Array(n), zero: 0, bigint: false },
  uint64: { tags: ['[object BigUint64Array]'], ctor: BigUint64Array, make: (n) => new BigUint64Array(n), zero: 0n, bigint: true },
  bool: { tags: ['[object Uint8Array]'], ctor: Uint8Array, make: (n) => new Uint8Array(n), zero: 0, bigint: false },
  string: { tags: ['[object Array]'], ctor: Array, make: (n) => new Array<string>(n).fill(''), zero: '', bigint: false },
};

/** Every dtype name microbatch can batch, in table order. */
export const TENSOR_TYPES: readonly TensorType[] = Object.keys(DTYPES) as TensorType[];

/**
 * True when `type` is a dtype microbatch can batch.
 * @example
 * ```ts
 * isTensorType('float16'); // true
 * isTensorType('complex64'); // false
 * ```
 */
export function isTensorType(type: unknown): type is TensorType {
  return typeof type === 'string' && Object.prototype.hasOwnProperty.call(DTYPES, type);
}

/** The realm-independent tag of a data array, e.g. `'Float32Array'`. @internal */
export function dataKind(data: unknown): string {
  return Object.prototype.toString.call(data).slice(8, -1);
}

/** True when `data`'s array type is the one `type` requires. @internal */
export function dataMatchesType(type: TensorType, data: unknown): boolean {
  const info = DTYPES[type];
  return data instanceof info.ctor || info.tags.includes(Object.prototype.toString.call(data));
}

/**
 * A new zero-filled data array of `length` elements for `type`, of the same array class as
 * `like` when given, so that a batch built from `Float16Array` or cross-realm inputs keeps their
 * class.
 * @internal
 */
export function allocate(type: TensorType, length: number, like?: TensorData): TensorData {
  if (like !== undefined && !Array.isArray(like)) {
    const Ctor = like.constructor as new (n: number) => TypedArray;
    return new Ctor(length);
  }
  return DTYPES[type].make(length);
}

/**
 * Converts a pad value to the element type of `type`, so that a user can write `padValue: 0` for an
 * `int64` input or `padValue: true` for a `bool` one.
 * @internal
 */
export function coercePadValue(type: TensorType, value: number | bigint | string | boolean, where: string): number | bigint | string {
  const info = DTYPES[type];
  if (type === 'string') {
    if (typeof value !== 'string') throw new TypeError(`${where}: expected a string pad value for a string tensor, got ${String(value)} (${typeof value})`);
    return value;
  }
  if (typeof value === 'string') throw new TypeError(`${where}: expected a numeric pad value for a ${type} tensor, got the string ${JSON.stringify(value)}`);
  if (typeof value === 'boolean') return info.bigint ? BigInt(value ? 1 : 0) : value ? 1 : 0;
  if (info.bigint) {
    if (typeof value === 'bigint') return value;
    if (!Number.isInteger(value)) throw new TypeError(`${where}: expected an integer pad value for a ${type} tensor, got ${value}`);
    return BigInt(value);
  }
  return typeof value === 'bigint' ? Number(value) : value;
}
