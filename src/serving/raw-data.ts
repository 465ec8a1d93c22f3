import { endianness } from 'node:os';
import type { TensorData } from '../tensor/dtypes';
import { ELEMENT_BYTES, type KServeDatatype } from './datatypes';

/**
 * Raw tensor bytes, as the KServe binary tensor extension and the gRPC `raw_input_contents` /
 * `raw_output_contents` carry them: little-endian element bytes (fixed-size types), or for
 * `BYTES` each element as a 4-byte little-endian length followed by its bytes.
 */

// Typed arrays use the machine's byte order; the wire is little-endian. On the rare big-endian
// machine every multi-byte element is swapped on the way in and out.
const SWAP = endianness() === 'BE';

type Fixed = Exclude<KServeDatatype, 'BYTES'>;

const CTORS: Record<Fixed, new (buffer: ArrayBuffer, byteOffset?: number, length?: number) => TensorData> = {
  BOOL: Uint8Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  UINT64: BigUint64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  INT64: BigInt64Array,
  FP16: Uint16Array, // raw half-precision bits, as onnxruntime-node stores float16
  FP32: Float32Array,
  FP64: Float64Array,
};

function swapInPlace(bytes: Uint8Array, size: number): void {
  if (!SWAP || size === 1) return;
  for (let i = 0; i < bytes.length; i += size) bytes.subarray(i, i + size).reverse();
}

/**
 * Decodes `bytes` into `count` elements of `datatype`. Returns an error sentence instead when the
 * byte count does not fit (the caller names the input).
 * @internal
 */
export function decodeBinary(datatype: KServeDatatype, bytes: Uint8Array, count: number): TensorData | string {
  if (datatype === 'BYTES') return decodeStrings(bytes, count);
  const size = ELEMENT_BYTES[datatype];
  if (bytes.length !== count * size) {
    return `expected ${count * size} bytes of binary data (${count} elements × ${size} bytes of ${datatype}), got ${bytes.length}`;
  }
  // In place when the bytes are aligned to the element size and are most of their buffer (the
  // HTTP route reads a binary body so that they are): no copy, and nothing much kept alive.
  if (!SWAP && bytes.byteOffset % size === 0 && bytes.buffer instanceof ArrayBuffer && bytes.byteLength * 2 >= bytes.buffer.byteLength) {
    return new CTORS[datatype](bytes.buffer, bytes.byteOffset, count);
  }
  // Otherwise a copy into a fresh, aligned buffer: the tensor must not keep a whole request body
  // (or a larger message) alive for a few bytes of it.
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  swapInPlace(copy, size);
  return new CTORS[datatype](copy.buffer);
}

function decodeStrings(bytes: Uint8Array, count: number): string[] | string {
  const out: string[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const decoder = new TextDecoder();
  while (at < bytes.length) {
    if (out.length === count) return `expected ${count} BYTES elements, but ${bytes.length - at} bytes are left over after them`;
    if (at + 4 > bytes.length) return `BYTES element ${out.length} is cut short: its 4-byte length prefix needs ${at + 4} bytes, got ${bytes.length}`;
    const len = view.getUint32(at, true);
    at += 4;
    if (at + len > bytes.length) return `BYTES element ${out.length} declares ${len} bytes, but only ${bytes.length - at} are left`;
    out.push(decoder.decode(bytes.subarray(at, at + len)));
    at += len;
  }
  if (out.length !== count) return `expected ${count} BYTES elements for the shape, got ${out.length}`;
  return out;
}

/**
 * Encodes tensor data as wire bytes for `datatype`.
 * @internal
 */
export function encodeBinary(datatype: KServeDatatype, data: TensorData): Buffer {
  if (datatype === 'BYTES') {
    const parts: Buffer[] = [];
    for (const s of data as readonly string[]) {
      const b = Buffer.from(String(s), 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32LE(b.length, 0);
      parts.push(len, b);
    }
    return Buffer.concat(parts);
  }
  const view = data as ArrayBufferView;
  const out = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  if (!SWAP) return out;
  const copy = Buffer.from(out);
  swapInPlace(copy, ELEMENT_BYTES[datatype]);
  return copy;
}

