/**
 * The models the benchmarks run: a generated MLP (64→256→256→10, cheap: ~0.05 ms at N=1 and
 * ~0.1 ms at N=64 on the 2-core box) and the real PaddleOCR direction classifier
 * (`x [N,3,48,192]` → `[N,2]`, ~1.3 ms at N=1, ~0.5 ms/item at N=16..32, much worse at N=64).
 *
 * The microbatch side uses an inline concat batch function: the items' Float32Arrays are copied
 * into one `[N, ...]` tensor (one copy in) and the output is sliced into one Float32Array per item
 * (one copy out). A single-item batch skips the input copy (the item's own array is the tensor).
 */
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { loadSession } from '../src/onnx/load-session';
import { mlpModel, seeded } from '../test/support/onnx-models';

export interface BenchModel {
  /** Which model, for a worker thread that loads its own copy. */
  readonly key: 'mlp' | 'cls' | 'wide';
  readonly name: string;
  readonly session: ort.InferenceSession;
  readonly inputName: string;
  readonly outputName: string;
  /** Shape of one item (without the batch axis). */
  readonly itemShape: readonly number[];
  /** Float32 elements in one item. */
  readonly itemSize: number;
  /** Float32 elements in one item's output. */
  readonly outSize: number;
  /** The batch size the benchmarks use for this model (its best per-item cost here). */
  readonly maxBatchSize: number;
  /** A pool of distinct inputs, one per request index (mod the pool size). */
  readonly items: readonly Float32Array[];
}

export const CLS_PATH = join(__dirname, '..', 'node_modules', '@gutenye', 'ocr-models', 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');

function itemPool(count: number, size: number, seed: number): Float32Array[] {
  const pool: Float32Array[] = [];
  for (let i = 0; i < count; i++) pool.push(seeded(size, seed + i));
  return pool;
}

async function load(key: BenchModel['key'], name: string, source: string | Uint8Array, itemShape: number[], maxBatchSize: number, pool: number): Promise<BenchModel> {
  // Through microbatch's loader, so the bench measures the session users get (its thread defaults).
  const session = await loadSession(source);
  const inputName = session.inputNames[0] as string;
  const outputName = session.outputNames[0] as string;
  const itemSize = itemShape.reduce((a, b) => a * b, 1);
  const items = itemPool(pool, itemSize, 11);
  const probe = await session.run({ [inputName]: new ort.Tensor('float32', items[0] as Float32Array, [1, ...itemShape]) });
  const outSize = (probe[outputName] as ort.Tensor).data.length;
  return { key, name, session, inputName, outputName, itemShape, itemSize, outSize, maxBatchSize, items };
}

/** The generated 64→256→256→10 MLP, batch size 64. */
/** The bench MLP's bytes (also built inside worker threads). */
export const mlpBytes = (): Uint8Array => mlpModel([64, 256, 256, 10]);

export function loadMlp(): Promise<BenchModel> {
  return load('mlp', 'mlp-64-256-256-10', mlpBytes(), [64], 64, 256);
}

/** The wide MLP's bytes: a cost curve dominated by the fixed cost (~0.4 ms at N=1, ~4.3 ms at N=64 here). */
export const wideMlpBytes = (): Uint8Array => mlpModel([256, 2048, 2048, 10]);

/** The generated 256→2048→2048→10 MLP, batch size 64: batching gains ~5× per item on it. */
export function loadWideMlp(): Promise<BenchModel> {
  return load('wide', 'mlp-256-2048-2048-10', wideMlpBytes(), [256], 64, 256);
}

/** The PaddleOCR direction classifier, batch size 32 (N=64 costs 2.5x more per item on 2 cores). */
export function loadCls(): Promise<BenchModel> {
  return load('cls', 'paddleocr-cls', CLS_PATH, [3, 48, 192], 32, 64);
}

/** Loads the models named (`mlp`, `cls`), in order. */
export async function loadModels(names: readonly string[] = ['mlp', 'cls']): Promise<BenchModel[]> {
  const out: BenchModel[] = [];
  for (const n of names) out.push(n === 'cls' ? await loadCls() : await loadMlp());
  return out;
}

/** One `session.run` on `n` rows already laid out in `data`; returns the output's data. */
export async function runRows(m: BenchModel, data: Float32Array, n: number): Promise<Float32Array> {
  const out = await m.session.run({ [m.inputName]: new ort.Tensor('float32', data, [n, ...m.itemShape]) });
  return (out[m.outputName] as ort.Tensor).data as Float32Array;
}

/**
 * Copies the items into one contiguous `[N * itemSize]` array (the single copy in). With `scratch`
 * the copy goes into that reusable buffer (grown when too small) instead of a fresh allocation.
 */
export function concatItems(items: readonly Float32Array[], itemSize: number, scratch?: { buf: Float32Array }): Float32Array {
  if (items.length === 1) return items[0] as Float32Array;
  const n = items.length * itemSize;
  let data: Float32Array;
  if (scratch === undefined) data = new Float32Array(n);
  else {
    if (scratch.buf.length < n) scratch.buf = new Float32Array(n);
    data = scratch.buf.subarray(0, n);
  }
  for (let i = 0; i < items.length; i++) data.set(items[i] as Float32Array, i * itemSize);
  return data;
}

/** Cuts the output into one copied row per item (the single copy out). */
export function sliceRows(out: Float32Array, n: number, outSize: number): Float32Array[] {
  const rows = new Array<Float32Array>(n);
  for (let i = 0; i < n; i++) rows[i] = out.slice(i * outSize, (i + 1) * outSize);
  return rows;
}

/**
 * The microbatch batch function: concat in, one `session.run`, slice out. `reuse: true` (the
 * default) copies into one scratch buffer kept across batches, which is safe only while one batch
 * runs at a time (`maxConcurrentBatches: 1`, the inline default): ORT is done with the input once
 * `run` resolves. `reuse: false` allocates a fresh input array per batch. For the 3.5 MB input of a
 * 32-item PaddleOCR batch the fresh allocation costs ~1.3-1.9 ms (page faults and zeroing) against
 * ~0.14 ms for the copy alone.
 */
export function concatBatchFn(m: BenchModel, reuse = true): (items: readonly Float32Array[]) => Promise<Float32Array[]> {
  const scratch = reuse ? { buf: new Float32Array(0) } : undefined;
  return async (items) => sliceRows(await runRows(m, concatItems(items, m.itemSize, scratch), items.length), items.length, m.outSize);
}

/** A single-item direct call: what a caller does without microbatch. */
export async function runOne(m: BenchModel, item: Float32Array): Promise<Float32Array> {
  return runRows(m, item, 1);
}

/** A pre-formed batch of `maxBatchSize` rows, for the no-framework limit. */
export function preformedBatch(m: BenchModel): Float32Array {
  const n = m.maxBatchSize;
  const data = new Float32Array(n * m.itemSize);
  for (let i = 0; i < n; i++) data.set(m.items[i % m.items.length] as Float32Array, i * m.itemSize);
  return data;
}
