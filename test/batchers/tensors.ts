import { DTYPES, TENSOR_TYPES, type TensorData, type TensorType } from '../../src/tensor/dtypes';
import type { TensorLike } from '../../src/tensor/tensor-like';

/** Every dtype, for tests that must cover them all. */
export const ALL_TYPES: readonly TensorType[] = TENSOR_TYPES;

/**
 * A tensor whose elements are distinct-ish values derived from `seed`, so that a misplaced copy
 * shows up as a wrong value.
 */
export function tensor(type: TensorType, dims: readonly number[], seed = 1): TensorLike {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = DTYPES[type].make(n) as TensorData;
  let x = (seed * 2654435761) >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const v = x >>> 8;
    switch (type) {
      case 'string':
        (data as string[])[i] = `s${v.toString(36)}`;
        break;
      case 'int64':
        (data as BigInt64Array)[i] = BigInt(v) * (v & 1 ? -1n : 1n) * 1_000_000_007n;
        break;
      case 'uint64':
        (data as BigUint64Array)[i] = BigInt(v) * 4_000_000_007n;
        break;
      case 'bool':
        (data as Uint8Array)[i] = v & 1;
        break;
      case 'float32':
      case 'float64':
        (data as Float64Array)[i] = (v - 8_000_000) / 7;
        break;
      default:
        (data as Uint32Array)[i] = v;
    }
  }
  return { type, data, dims: [...dims] };
}

/** A plain snapshot of a tensor, for `toEqual` across array classes and tensor classes. */
export function plain(t: TensorLike): { type: string; dims: number[]; kind: string; data: unknown[] } {
  return { type: t.type, dims: [...t.dims], kind: Object.prototype.toString.call(t.data), data: Array.from(t.data as ArrayLike<unknown>) };
}

/** `plain` over a tensor, tuple or record. */
export function plainAll(v: unknown): unknown {
  if (Array.isArray(v)) return v.map((t) => plain(t as TensorLike));
  if (typeof v === 'object' && v !== null && 'dims' in v) return plain(v as TensorLike);
  return Object.fromEntries(Object.entries(v as Record<string, TensorLike>).map(([k, t]) => [k, plain(t)]));
}

/** The element at a multi-index of a row-major tensor. */
export function at(t: TensorLike, ...index: number[]): unknown {
  let flat = 0;
  index.forEach((i, a) => (flat = flat * (t.dims[a] as number) + i));
  return (t.data as ArrayLike<unknown>)[flat];
}

/** The identity batch function: returns its batch. */
export const identity = <T>(batch: T): T => batch;
