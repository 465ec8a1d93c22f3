import { join } from 'node:path';
import { bufferPoolStats, clearBufferPool, giveBuffer, takeBuffer } from '../../src/tensor/buffer-pool';
import { concatInto } from '../../src/tensor/copy';
import { WorkerExecutor } from '../../src/executors/worker';
import type { Batch } from '../fixtures/workers/returns-batch.worker';
import { createOnnxHost } from '../../src/onnx';
import { Tensor } from 'onnxruntime-node';
import { OCR_CLS, maxAbsDiff } from '../onnx/real-models';

// Batch buffers a worker hands back are kept for the next batch of the same size: a fresh 3.5 MB
// batch costs page faults a reused one does not. Nothing may be kept that anything else still
// references, and a reused buffer's old contents must never show.

const KIB = 1024;
beforeEach(() => clearBufferPool());

describe('the pool', () => {
  test('gives back a kept buffer of exactly the size asked, once', () => {
    const b = new ArrayBuffer(128 * KIB);
    giveBuffer(b);
    expect(takeBuffer(64 * KIB)).toBeUndefined();
    expect(takeBuffer(128 * KIB) === b).toBe(true);
    expect(takeBuffer(128 * KIB)).toBeUndefined();
    expect(bufferPoolStats()).toEqual({ buffers: 0, bytes: 0, hits: 1, misses: 2 });
  });

  test('keeps nothing under 64 KiB, and at most 4 buffers of one size', () => {
    giveBuffer(new ArrayBuffer(32 * KIB));
    expect(takeBuffer(32 * KIB)).toBeUndefined();
    for (let i = 0; i < 6; i++) giveBuffer(new ArrayBuffer(64 * KIB));
    expect(bufferPoolStats()).toMatchObject({ buffers: 4, bytes: 256 * KIB });
  });

  test('holds at most 256 MiB in all', () => {
    for (let i = 0; i < 4; i++) giveBuffer(new ArrayBuffer(60 * KIB * KIB));
    giveBuffer(new ArrayBuffer(30 * KIB * KIB));
    expect(bufferPoolStats()).toMatchObject({ buffers: 4, bytes: 240 * KIB * KIB });
    giveBuffer(new ArrayBuffer(10 * KIB * KIB));
    expect(bufferPoolStats()).toMatchObject({ buffers: 5, bytes: 250 * KIB * KIB });
  });
});

describe('concatInto builds a batch in a kept buffer', () => {
  const COLS = 8192; // three rows: 96 KiB, over the pool's 64 KiB floor
  const block = (v: number, rows: number): { data: Float32Array; dims: number[] } => ({ data: new Float32Array(rows * COLS).fill(v), dims: [rows, COLS] });

  test('every element of a reused buffer is overwritten by the blocks', () => {
    const dirty = new ArrayBuffer(3 * COLS * 4);
    new Float32Array(dirty).fill(-7);
    giveBuffer(dirty);
    const { data, dims } = concatInto('float32', [block(1, 1), block(2, 2)], 0);
    expect((data as Float32Array).buffer === dirty).toBe(true);
    expect(dims).toEqual([3, COLS]);
    const values = data as Float32Array;
    expect(values.subarray(0, COLS).every((v) => v === 1)).toBe(true);
    expect(values.subarray(COLS).every((v) => v === 2)).toBe(true);
  });

  test('a padded batch is never built in a reused buffer (its padding relies on fresh zeros)', () => {
    const dirty = new ArrayBuffer(2 * COLS * 4);
    new Float32Array(dirty).fill(-7);
    giveBuffer(dirty);
    const { data } = concatInto('float32', [{ data: new Float32Array(2 * (COLS / 2)).fill(1), dims: [2, COLS / 2] }], 0, { axis: 1, length: COLS, value: 0 });
    expect((data as Float32Array).buffer === dirty).toBe(false);
    expect(Array.from((data as Float32Array).subarray(COLS / 2, COLS)).every((v) => v === 0)).toBe(true);
  });
});

describe('a worker whose batch object sets returnsBatch hands its batch buffers back', () => {
  const MODULE = join(__dirname, '../fixtures/workers/returns-batch.worker.ts');
  const run = async (workerData: { returns: boolean; echo?: boolean }, batch: Batch): Promise<{ sum: number; echo?: Float32Array }> => {
    const executor = new WorkerExecutor<Batch, { sum: number; echo?: Float32Array }>({ module: MODULE, workers: 1, transferBatch: true, workerData, name: 'returns' });
    await executor.start();
    try {
      return await executor.run(batch);
    } finally {
      await executor.stop();
    }
  };
  const batch = (): Batch => ({ x: new Float32Array(32 * KIB).fill(0.5) }); // 128 KiB

  test('returnsBatch: the answer, and the batch buffer kept for the next batch of its size', async () => {
    await expect(run({ returns: true }, batch())).resolves.toEqual({ sum: 16 * KIB });
    expect(bufferPoolStats()).toMatchObject({ buffers: 1, bytes: 128 * KIB });
    expect(takeBuffer(128 * KIB)?.byteLength).toBe(128 * KIB);
  });

  test('without it (the default) nothing comes back', async () => {
    await expect(run({ returns: false }, batch())).resolves.toEqual({ sum: 16 * KIB });
    expect(bufferPoolStats().buffers).toBe(0);
  });

  test('a buffer the answer itself uses is the answer’s, not kept', async () => {
    const answer = await run({ returns: true, echo: true }, batch());
    expect(answer.sum).toBe(16 * KIB);
    expect(answer.echo?.length).toBe(32 * KIB);
    expect(answer.echo?.every((v) => v === 0.5)).toBe(true);
    expect(bufferPoolStats().buffers).toBe(0);
  });
});

test('the PaddleOCR classifier in a worker: batches built in handed-back buffers answer exactly as fresh ones', async () => {
  const host = await createOnnxHost(OCR_CLS, { maxBatchSize: 8, workers: 1, threads: 1, name: 'cls' });
  try {
    const item = (v: number): Record<string, Tensor> => ({ x: new Tensor('float32', new Float32Array(3 * 48 * 192).map((_, i) => ((i * 7919 + v * 104729) % 1000) / 1000), [1, 3, 48, 192]) });
    const alone = await Promise.all([0, 1, 2].map(async (v) => (Object.values(await host.inference(item(v)))[0] as Tensor).data as Float32Array));
    for (let round = 0; round < 6; round++) {
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => host.inference(item(i % 3))));
      answers.forEach((a, i) => expect(maxAbsDiff((Object.values(a)[0] as Tensor).data as Float32Array, alone[i % 3] as Float32Array)).toBeLessThan(1e-5));
    }
    expect(bufferPoolStats().hits).toBeGreaterThan(0); // full batches of 8 (884,736 bytes) were built in kept buffers
  } finally {
    await host.stop();
  }
});
