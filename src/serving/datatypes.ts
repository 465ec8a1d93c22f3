import type { TensorType } from '../tensor/dtypes';

/**
 * The KServe v2 / Triton datatype names and the tensor types (onnxruntime's names) they stand
 * for. `BF16` has no onnxruntime-node tensor type and is not served.
 */
export const KSERVE_DATATYPES = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BYTES: 'string',
} as const satisfies Record<string, TensorType>;

/** A KServe v2 datatype name, such as `'FP32'` or `'BYTES'`. */
export type KServeDatatype = keyof typeof KSERVE_DATATYPES;

const BY_TENSOR_TYPE = new Map<string, KServeDatatype>(Object.entries(KSERVE_DATATYPES).map(([k, v]) => [v, k as KServeDatatype]));

/**
 * The KServe datatype of a tensor type (`'float32'` → `'FP32'`), or `undefined` for a type the
 * protocol cannot carry.
 * @example
 * ```ts
 * kserveDatatype('int64'); // 'INT64'
 * ```
 */
export function kserveDatatype(type: string): KServeDatatype | undefined {
  return BY_TENSOR_TYPE.get(type);
}

/** True when `name` is a KServe datatype this server handles. @internal */
export function isKServeDatatype(name: unknown): name is KServeDatatype {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(KSERVE_DATATYPES, name);
}

/** Bytes per element in the binary form (`BYTES` is variable: 4-byte length + bytes each). @internal */
export const ELEMENT_BYTES: Readonly<Record<Exclude<KServeDatatype, 'BYTES'>, number>> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
};

// float16 travels as raw bits (a Uint16Array), as onnxruntime-node stores it; JSON carries numbers,
// so the two conversions below are needed only for the JSON form.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The IEEE 754 half-precision bits nearest to `value` (round to nearest even). @internal */
export function toHalfBits(value: number): number {
  f32[0] = value;
  const x = u32[0] as number;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0); // Inf, NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → Inf
  if (e <= 0) {
    if (e < -10) return sign; // underflow → ±0
    mant |= 0x800000; // subnormal: shift the implicit 1 in
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, which is the right rounding (up to Inf).
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++;
  return sign | half;
}

/** The number that half-precision `bits` stand for. @internal */
export function fromHalfBits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
