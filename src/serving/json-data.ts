import type { TensorData } from '../tensor/dtypes';
import { fromHalfBits, toHalfBits, type KServeDatatype } from './datatypes';
import { invalidArgument } from './errors';

/**
 * Tensor data in the JSON form: a flat row-major array (nested arrays are flattened, as Triton
 * allows), numbers for numeric types, booleans (or 0/1) for `BOOL`, strings for `BYTES`, and for
 * `INT64`/`UINT64` either safe-integer numbers or decimal strings (exact past 2^53).
 */

const INT_RANGES: Partial<Record<KServeDatatype, readonly [number, number]>> = {
  INT8: [-128, 127],
  INT16: [-32768, 32767],
  INT32: [-2147483648, 2147483647],
  UINT8: [0, 255],
  UINT16: [0, 65535],
  UINT32: [0, 4294967295],
};

const BIG_RANGES: Partial<Record<KServeDatatype, readonly [bigint, bigint]>> = {
  INT64: [-(2n ** 63n), 2n ** 63n - 1n],
  UINT64: [0n, 2n ** 64n - 1n],
};

/** Nested data deeper than this is refused (a tensor of rank 32 is already absurd). */
const MAX_NESTING = 32;

/**
 * Flattens nested arrays into `out`. Returns `'long'` past `limit` elements and `'deep'` past
 * {@link MAX_NESTING} levels, so that a hostile body cannot overflow the stack.
 */
function flatten(value: readonly unknown[], out: unknown[], limit: number, depth = 0): 'ok' | 'long' | 'deep' {
  if (depth > MAX_NESTING) return 'deep';
  for (const v of value) {
    if (Array.isArray(v)) {
      const r = flatten(v, out, limit, depth + 1);
      if (r !== 'ok') return r;
    } else {
      if (out.length >= limit) return 'long';
      out.push(v);
    }
  }
  return 'ok';
}

/**
 * Converts the JSON `data` of one input to the typed array its datatype needs, checking each
 * element. Throws a 400 naming the input (`name`) and the first bad element.
 * @internal
 */
export function parseJsonData(datatype: KServeDatatype, raw: unknown, count: number, name: string): TensorData {
  if (!Array.isArray(raw)) throw invalidArgument('invalid_data', `${name}: "data" must be an array of ${count} elements, got ${raw === null ? 'null' : typeof raw}`);
  const flat: unknown[] = [];
  // One more than expected is enough to know the length is wrong, without flattening a huge array.
  const flattened = flatten(raw, flat, count + 1);
  if (flattened === 'deep') throw invalidArgument('invalid_data', `${name}: "data" is nested more than ${MAX_NESTING} levels deep`);
  if (flattened === 'long' || flat.length !== count) {
    throw invalidArgument('data_length', `${name}: expected ${count} data elements (the product of the shape), got ${flat.length > count ? 'more' : flat.length}`);
  }
  const bad = (i: number, want: string): never => {
    throw invalidArgument('invalid_data', `${name}: data element ${i} must be ${want}, got ${JSON.stringify(flat[i]) ?? String(flat[i])}`);
  };
  switch (datatype) {
    case 'BYTES':
      flat.forEach((v, i) => typeof v !== 'string' && bad(i, 'a string'));
      return flat as string[];
    case 'BOOL': {
      const out = new Uint8Array(count);
      flat.forEach((v, i) => {
        if (v === true || v === 1) out[i] = 1;
        else if (v !== false && v !== 0) bad(i, 'true or false');
      });
      return out;
    }
    case 'FP32':
    case 'FP64':
    case 'FP16': {
      const out = datatype === 'FP32' ? new Float32Array(count) : datatype === 'FP64' ? new Float64Array(count) : new Uint16Array(count);
      const half = datatype === 'FP16';
      flat.forEach((v, i) => {
        if (typeof v !== 'number') bad(i, 'a number');
        out[i] = half ? toHalfBits(v as number) : (v as number);
      });
      return out;
    }
    case 'INT64':
    case 'UINT64': {
      const [lo, hi] = BIG_RANGES[datatype] as readonly [bigint, bigint];
      const out = datatype === 'INT64' ? new BigInt64Array(count) : new BigUint64Array(count);
      const want = `an integer from ${lo} to ${hi} (a number up to 2^53, or a decimal string)`;
      flat.forEach((v, i) => {
        let b: bigint | undefined;
        if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
        else if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) b = BigInt(v);
        if (b === undefined || b < lo || b > hi) bad(i, want);
        out[i] = b as bigint;
      });
      return out;
    }
    default: {
      const [lo, hi] = INT_RANGES[datatype] as readonly [number, number];
      const Ctor = { INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array }[datatype];
      const out = new Ctor(count);
      flat.forEach((v, i) => {
        if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) bad(i, `an integer from ${lo} to ${hi}`);
        out[i] = v as number;
      });
      return out;
    }
  }
}

/**
 * Writes tensor data as a JSON array, by hand rather than through `JSON.stringify`, so that 64-bit
 * integers keep every digit. Non-finite floats, which JSON cannot write, become `null` (use the
 * binary form to get them exactly).
 * @internal
 */
export function jsonData(datatype: KServeDatatype, data: TensorData, int64As: 'number' | 'string'): string {
  const parts = new Array<string>(data.length);
  switch (datatype) {
    case 'BYTES':
      for (let i = 0; i < data.length; i++) parts[i] = JSON.stringify(String(data[i]));
      break;
    case 'BOOL':
      for (let i = 0; i < data.length; i++) parts[i] = data[i] ? 'true' : 'false';
      break;
    case 'INT64':
    case 'UINT64':
      for (let i = 0; i < data.length; i++) parts[i] = int64As === 'string' ? `"${String(data[i])}"` : String(data[i]);
      break;
    default: {
      const half = datatype === 'FP16';
      for (let i = 0; i < data.length; i++) {
        const v = half ? fromHalfBits(data[i] as number) : (data[i] as number);
        parts[i] = Number.isFinite(v) ? String(v) : 'null';
      }
    }
  }
  return `[${parts.join(',')}]`;
}
