import { Tensor } from 'onnxruntime-node';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import type { BatchEvent } from '../../src/core/observer';
import { createOnnxHost, type OnnxFeeds, type OnnxResults } from '../../src/onnx';
import { seeded, VAR_LENGTH_BIAS, varLengthModel, varLengthReference } from '../support/onnx-models';

// The generated variable-length model `X [N, L]` → `Y [N, L]` (per position) and `total [N]` (a sum
// over L), batched with a PadBatcher through createOnnxHost's `batcher` option: what padding does
// to per-position and to reduced outputs, and how an attention mask undoes it.

const lengths = [2, 5, 3, 5];
const rows = lengths.map((len, i) => seeded(len, 300 + i));
const feeds = (r: Float32Array): OnnxFeeds => ({ X: new Tensor('float32', r, [1, r.length]) });

async function runAll(mask: boolean): Promise<{ results: OnnxResults[]; batches: BatchEvent[] }> {
  const batches: BatchEvent[] = [];
  const host = await createOnnxHost(varLengthModel({ mask }), {
    maxBatchSize: 8,
    observer: { onBatch: (b) => batches.push(b) },
    batcher: new PadBatcher<OnnxFeeds, OnnxResults, OnnxFeeds>({
      padAxis: 1,
      unpadAxis: 1,
      unpadOutputs: ['Y'], // `total` has no L axis left to trim
      ...(mask ? { maskKey: 'mask', maskType: 'float32' as const } : {}),
    }),
  });
  const results = await Promise.all(rows.map((r) => host.inference(feeds(r))));
  await host.stop();
  return { results, batches };
}

test('without a mask: per-position outputs are exact once trimmed; the sum over L gains the bias per padded position', async () => {
  const { results, batches } = await runAll(false);
  expect(batches.map((b) => b.modelCalls)).toEqual([1]);
  expect(batches[0]!.paddingWaste).toBeCloseTo((3 + 0 + 2 + 0) / 20, 6);
  rows.forEach((r, i) => {
    const ref = varLengthReference(r);
    expect(results[i]!.Y!.dims).toEqual([1, r.length]);
    Array.from(results[i]!.Y!.data as Float32Array).forEach((v, k) => expect(v).toBeCloseTo(ref.Y[k]!, 5));
    const padded = 5 - r.length;
    expect((results[i]!.total!.data as Float32Array)[0]).toBeCloseTo(ref.total + padded * VAR_LENGTH_BIAS, 5);
  });
});

test('with the mask the PadBatcher adds, the sum over L equals the unpadded one', async () => {
  const { results } = await runAll(true);
  rows.forEach((r, i) => {
    const ref = varLengthReference(r);
    Array.from(results[i]!.Y!.data as Float32Array).forEach((v, k) => expect(v).toBeCloseTo(ref.Y[k]!, 5));
    expect((results[i]!.total!.data as Float32Array)[0]).toBeCloseTo(ref.total, 5);
  });
});
