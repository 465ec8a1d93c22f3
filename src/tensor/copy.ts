import { allocate, type TensorData, type TensorType } from './dtypes';
import { sizeOf } from './tensor-like';
import { takeBuffer } from './buffer-pool';

/** Index access shared by typed arrays and `string[]`, for the element-wise copy loops. */
type Elements = { [index: number]: unknown; readonly length: number };

/**
 * Below this run length a plain loop beats `set(subarray())`, whose two allocations dominate for
 * the tiny runs of a last-axis concatenation.
 */
const SET_THRESHOLD = 32;

function stridesOf(dims: readonly number[]): number[] {
  const strides = new Array<number>(dims.length);
  let s = 1;
  for (let a = dims.length - 1; a >= 0; a--) {
    strides[a] = s;
    s *= dims[a] as number;
  }
  return strides;
}

function copyRun(src: TensorData, from: number, dst: TensorData, to: number, length: number): void {
  if (length >= SET_THRESHOLD && !Array.isArray(src)) {
    // Same array class on both sides (the batchers allocate like their inputs), so the cast is sound.
    (dst as Float64Array).set((src as Float64Array).subarray(from, from + length), to);
    return;
  }
  const s = src as Elements;
  const d = dst as { [index: number]: unknown };
  for (let i = 0; i < length; i++) d[to + i] = s[from + i];
}

/**
 * Copies an N-d box of `region` dims from `src` (starting at `srcAt` per axis) into `dst`
 * (starting at `dstAt`). Both arrays are row-major with the same rank. The axes after the
 * innermost one where the box does not span both arrays are contiguous in both, so each box row
 * is one run: one run per item for a batch-axis-0 concatenation, one run per outer index for a
 * strided one.
 * @internal
 */
export function copyRegion(
  src: TensorData,
  srcDims: readonly number[],
  srcAt: readonly number[],
  dst: TensorData,
  dstDims: readonly number[],
  dstAt: readonly number[],
  region: readonly number[],
): void {
  const rank = region.length;
  if (rank === 0) {
    copyRun(src, 0, dst, 0, 1);
    return;
  }
  if (sizeOf(region) === 0) return;
  let j = rank - 1;
  let run = 1;
  while (j > 0 && region[j] === srcDims[j] && region[j] === dstDims[j]) {
    run *= region[j] as number;
    j--;
  }
  run *= region[j] as number;
  const ss = stridesOf(srcDims);
  const ds = stridesOf(dstDims);
  let srcBase = 0;
  let dstBase = 0;
  for (let a = 0; a <= j; a++) {
    srcBase += (srcAt[a] as number) * (ss[a] as number);
    dstBase += (dstAt[a] as number) * (ds[a] as number);
  }
  if (j === 0) {
    copyRun(src, srcBase, dst, dstBase, run);
    return;
  }
  // Odometer over the axes before j.
  const idx = new Array<number>(j).fill(0);
  let so = srcBase;
  let d0 = dstBase;
  for (;;) {
    copyRun(src, so, dst, d0, run);
    let a = j - 1;
    for (; a >= 0; a--) {
      idx[a] = (idx[a] as number) + 1;
      so += ss[a] as number;
      d0 += ds[a] as number;
      if ((idx[a] as number) < (region[a] as number)) break;
      so -= (region[a] as number) * (ss[a] as number);
      d0 -= (region[a] as number) * (ds[a] as number);
      idx[a] = 0;
    }
    if (a < 0) return;
  }
}

/** One input of {@link concatInto}: a tensor's data and dims. @internal */
export interface Block {
  readonly data: TensorData;
  readonly dims: readonly number[];
}

/** A typed array of `length` elements like `like` over a buffer a worker handed back, if one of that size is kept. */
function reused(length: number, like: TensorData): TensorData | undefined {
  if (Array.isArray(like)) return undefined;
  const typed = like as Exclude<TensorData, readonly unknown[]> & { BYTES_PER_ELEMENT: number };
  const buffer = takeBuffer(length * typed.BYTES_PER_ELEMENT);
  if (buffer === undefined) return undefined;
  const Ctor = typed.constructor as new (buffer: ArrayBuffer, byteOffset: number, length: number) => TensorData;
  return new Ctor(buffer, 0, length);
}

/**
 * Concatenates blocks along `axis` into one newly allocated (or reused) buffer, each block copied once and,
 * when `padAxis` is given, placed at the start of that axis of a batch `padTo` long, the rest
 * filled with `padValue`. All blocks must agree on every other axis (the batchers check first).
 * @internal
 */
export function concatInto(
  type: TensorType,
  blocks: readonly Block[],
  axis: number,
  pad?: { readonly axis: number; readonly length: number; readonly value: number | bigint | string },
): { data: TensorData; dims: number[] } {
  const first = blocks[0] as Block;
  const dims = [...first.dims];
  let total = 0;
  for (const b of blocks) total += b.dims[axis] as number;
  dims[axis] = total;
  if (pad !== undefined) dims[pad.axis] = pad.length;
  // Without padding the blocks cover every element, so a reused buffer's old contents never show.
  const data = (pad === undefined ? reused(sizeOf(dims), first.data) : undefined) ?? allocate(type, sizeOf(dims), first.data);
  if (pad !== undefined && pad.value !== 0 && pad.value !== 0n) {
    (data as Float64Array).fill(pad.value as number);
  } else if (Array.isArray(data)) {
    data.fill('');
  }
  const at = new Array<number>(dims.length).fill(0);
  for (const b of blocks) {
    copyRegion(b.data, b.dims, new Array<number>(b.dims.length).fill(0), data, dims, at, b.dims);
    at[axis] = (at[axis] as number) + (b.dims[axis] as number);
  }
  return { data, dims };
}

/**
 * Copies `count` entries starting at `start` along `axis` (and, if given, the first `keep`
 * entries along `trim.axis`) out of a tensor into a new buffer the caller owns, so the batch's
 * buffer can be freed.
 * @internal
 */
export function sliceAxis(
  type: TensorType,
  data: TensorData,
  dims: readonly number[],
  axis: number,
  start: number,
  count: number,
  trim?: { readonly axis: number; readonly keep: number },
): { data: TensorData; dims: number[] } {
  const out = [...dims];
  out[axis] = count;
  if (trim !== undefined) out[trim.axis] = trim.keep;
  const target = allocate(type, sizeOf(out), data);
  const from = new Array<number>(dims.length).fill(0);
  from[axis] = start;
  copyRegion(data, dims, from, target, out, new Array<number>(dims.length).fill(0), out);
  return { data: target, dims: out };
}

/** A copy of a whole data array, of the same class. @internal */
export function cloneData(data: TensorData): TensorData {
  return Array.isArray(data) ? [...data] : data.slice();
}
