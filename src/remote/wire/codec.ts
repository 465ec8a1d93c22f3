import { isError } from '../../core/describe';
import { reviveError, serializeError, type WireError } from '../../executors/worker/wire-error';
import { encodeFrame, type Frame } from './framing';

/**
 * Values ↔ frames. A value becomes JSON in the header, except what JSON cannot carry, which is
 * tagged with a `$mb` key: typed arrays (their bytes go to raw segments), tensors that were class
 * instances (onnxruntime `Tensor`: rebuilt as such on the other side), errors, bigints, `undefined`,
 * non-finite numbers and Dates. A user object that itself has a `$mb` key is escaped.
 * @internal
 */

type Tagged =
  | { $mb: 'ta'; k: string; s: number }
  | { $mb: 'ab'; s: number }
  | { $mb: 'tensor'; c: string; type: string; dims: number[]; d: unknown }
  | { $mb: 'err'; e: WireError }
  | { $mb: 'big'; v: string }
  | { $mb: 'num'; v: string }
  | { $mb: 'undef' }
  | { $mb: 'date'; v: number }
  | { $mb: 'obj'; v: Record<string, unknown> };

/** Typed arrays that may cross, by name: the receiver builds only these (never an arbitrary name). */
const TYPED_ARRAYS: Readonly<Record<string, new (buffer: ArrayBuffer) => ArrayBufferView>> = {
  Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Uint8Array, Uint8ClampedArray,
  Uint16Array, Uint32Array, BigInt64Array, BigUint64Array,
};

/** Nested deeper than this is refused: real requests are shallow, cycles are not. */
const MAX_DEPTH = 32;

/** Builds the receiving side's tensor from a tensor that was a class instance on the sending side. */
export type SocketTensorReviver = (className: string, type: string, data: unknown, dims: readonly number[]) => unknown;

function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as object | null;
  return proto === null || proto === Object.prototype;
}

function tensorOf(v: object): { type: string; data: unknown; dims: number[] } | undefined {
  const t = v as { type?: unknown; data?: unknown; dims?: unknown };
  if (typeof t.type !== 'string' || !Array.isArray(t.dims)) return undefined;
  const data = t.data;
  return ArrayBuffer.isView(data) || Array.isArray(data) ? { type: t.type, data, dims: [...(t.dims as number[])] } : undefined;
}

/**
 * Encodes a message (`header` fields plus a `value`) into the buffers of one frame.
 * Throws a TypeError naming the path of a value that cannot be sent (a function, a Map...).
 * @internal
 */
export function encodeMessage(fields: Record<string, unknown>, value?: unknown): Buffer[] {
  const segments: Buffer[] = [];
  const lengths: Array<[string, number]> = [];
  const segment = (bytes: Buffer, kind: string): number => {
    segments.push(bytes);
    lengths.push([kind, bytes.byteLength]);
    return segments.length - 1;
  };
  const walk = (v: unknown, path: string, depth: number): unknown => {
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        return Number.isFinite(v) && !Object.is(v, -0) ? v : ({ $mb: 'num', v: String(Object.is(v, -0) ? '-0' : v) } satisfies Tagged);
      case 'bigint':
        return { $mb: 'big', v: v.toString() } satisfies Tagged;
      case 'undefined':
        return { $mb: 'undef' } satisfies Tagged;
      case 'function':
      case 'symbol':
        throw new TypeError(`cannot send ${typeof v} at ${path} to the host`);
    }
    if (v === null) return null;
    if (depth > MAX_DEPTH) throw new TypeError(`the value at ${path} is nested deeper than ${MAX_DEPTH} levels (a cycle?)`);
    const o = v as object;
    if (ArrayBuffer.isView(o)) {
      const kind = o.constructor.name;
      if (!(kind in TYPED_ARRAYS)) throw new TypeError(`cannot send a ${kind} at ${path} to the host`);
      return { $mb: 'ta', k: kind, s: segment(Buffer.from(o.buffer, o.byteOffset, o.byteLength), kind) } satisfies Tagged;
    }
    if (o instanceof ArrayBuffer) return { $mb: 'ab', s: segment(Buffer.from(o), 'ArrayBuffer') } satisfies Tagged;
    if (isError(o)) return { $mb: 'err', e: serializeError(o) } satisfies Tagged;
    if (o instanceof Date) return { $mb: 'date', v: o.getTime() } satisfies Tagged;
    if (Array.isArray(o)) return o.map((e, i) => walk(e, `${path}[${i}]`, depth + 1));
    if (!isPlain(o)) {
      const t = tensorOf(o);
      if (t === undefined) throw new TypeError(`cannot send ${o.constructor?.name ?? 'an object'} at ${path} to the host; send plain objects, arrays, typed arrays or tensors`);
      return { $mb: 'tensor', c: o.constructor?.name ?? 'Tensor', type: t.type, dims: t.dims, d: walk(t.data, `${path}.data`, depth + 1) } satisfies Tagged;
    }
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries(o)) setOwn(out, k, walk(e, `${path}.${k}`, depth + 1));
    return '$mb' in out ? ({ $mb: 'obj', v: out } satisfies Tagged) : out;
  };
  const header: Record<string, unknown> = { ...fields };
  if (arguments.length > 1) header.v = walk(value, 'the value', 0);
  if (lengths.length > 0) header.s = lengths;
  return encodeFrame(JSON.stringify(header), segments);
}

/** A decoded message: its header fields, and `value` when it carried one. @internal */
export interface Message {
  readonly [field: string]: unknown;
  readonly t: string;
  readonly value?: unknown;
}

/** Writes an own property even for the key `__proto__` (JSON.parse makes one; `=` would set the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * Decodes one frame. Segments are copied out of the frame into fresh buffers, so typed arrays are
 * aligned, own their memory and are regular ArrayBuffers (onnxruntime rejects shared ones).
 * Throws on a malformed frame.
 * @internal
 */
export function decodeMessage(frame: Frame, reviveTensor: SocketTensorReviver): Message {
  const header = JSON.parse(frame.header) as Record<string, unknown>;
  if (typeof header !== 'object' || header === null || typeof header.t !== 'string') throw new Error('a frame header without a message type');
  const lengths = (header.s ?? []) as Array<[string, number]>;
  if (!Array.isArray(lengths)) throw new Error('a frame header with malformed segments');
  const offsets: number[] = [];
  let at = 0;
  for (const entry of lengths) {
    offsets.push(at);
    at += Number(entry[1]);
  }
  if (at !== frame.body.byteLength) throw new Error(`a frame announces ${at} segment bytes but carries ${frame.body.byteLength}`);
  const bytes = (s: unknown): ArrayBuffer => {
    const i = Number(s);
    if (!Number.isInteger(i) || i < 0 || i >= lengths.length) throw new Error(`a frame refers to segment ${String(s)}, which it does not carry`);
    const start = offsets[i] as number;
    const copy = frame.body.subarray(start, start + (lengths[i] as [string, number])[1]);
    return new Uint8Array(copy).buffer; // new Uint8Array(view) copies: an own, aligned, regular buffer
  };
  const walk = (v: unknown): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    if (Array.isArray(v)) return v.map(walk);
    const r = v as Record<string, unknown>;
    if (!('$mb' in r)) {
      for (const k of Object.keys(r)) setOwn(r, k, walk(r[k]));
      return r;
    }
    const tagged = r as Tagged;
    switch (tagged.$mb) {
      case 'ta': {
        const Ctor = TYPED_ARRAYS[tagged.k];
        if (Ctor === undefined) throw new Error(`a frame carries an unknown array type ${JSON.stringify(tagged.k)}`);
        const buffer = bytes(tagged.s);
        const per = (Ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
        if (buffer.byteLength % per !== 0) throw new Error(`a ${tagged.k} segment of ${buffer.byteLength} bytes is not a whole number of elements`);
        return new Ctor(buffer);
      }
      case 'ab':
        return bytes(tagged.s);
      case 'tensor':
        return reviveTensor(tagged.c, tagged.type, walk(tagged.d), tagged.dims);
      case 'err':
        return reviveError(tagged.e);
      case 'big':
        return BigInt(tagged.v);
      case 'num':
        return tagged.v === '-0' ? -0 : Number(tagged.v);
      case 'undef':
        return undefined;
      case 'date':
        return new Date(tagged.v);
      case 'obj': {
        const out = tagged.v;
        for (const k of Object.keys(out)) setOwn(out, k, walk(out[k]));
        return out;
      }
      default:
        throw new Error(`a frame carries an unknown tag ${JSON.stringify((tagged as { $mb: unknown }).$mb)}`);
    }
  };
  const { s: _segments, v, ...fields } = header;
  return 'v' in header ? { ...(fields as { t: string }), value: walk(v) } : (fields as { t: string });
}
