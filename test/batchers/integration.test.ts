import { InferenceSession, Tensor } from 'onnxruntime-node';
import { BucketBatcher } from '../../src/batchers/bucket-batcher';
import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import { DictBatcher } from '../../src/batchers/dict-batcher';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import { ModelHost } from '../../src/engine/model-host';
import { BatchSizeMismatchError } from '../../src/core/errors';
import type { BatchEvent } from '../../src/core/observer';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { linearModel, linearReference } from '../support/onnx-models';
import { tensor } from './tensors';

type Rec = Record<string, TensorLike>;
const f32 = (values: number[], dims: number[]): TensorLike => ({ type: 'float32', data: new Float32Array(values), dims });

test('ConcatBatcher + onnxruntime: concurrent single rows run as one batch and match per-row results', async () => {
  const session = await InferenceSession.create(linearModel());
  const batches: number[] = [];
  const host = new ModelHost(
    async (x: Tensor) => {
      batches.push(x.dims[0] as number);
      return (await session.run({ X: x })).Y as Tensor;
    },
    { maxBatchSize: 8, batcher: new ConcatBatcher<Tensor>({ shape: [-1, 4] }) },
  );
  const rows = Array.from({ length: 6 }, (_, i) => [i, i + 1, -i, 0.5 * i]);
  const ys = await Promise.all(rows.map((r) => host.inference(new Tensor('float32', new Float32Array(r), [1, 4]))));
  expect(batches).toEqual([6]);
  ys.forEach((y, i) => {
    expect(y).toBeInstanceOf(Tensor);
    expect(y.dims).toEqual([1, 3]);
    Array.from(y.data as Float32Array).forEach((v, k) => expect(v).toBeCloseTo(linearReference(rows[i]!)[k]!, 4));
  });
  await host.stop();
  await session.release();
});

test('a malformed item is rejected alone while the others in the same batch succeed', async () => {
  const calls: number[] = [];
  const host = new ModelHost(
    async (x: Rec) => {
      calls.push(x.a!.dims[0]!);
      return { sum: f32(Array.from(x.a!.data as Float32Array).map((v, i) => v + (x.b!.data as Float32Array)[i]!), [...x.a!.dims]) };
    },
    { maxBatchSize: 8, batcher: new ConcatBatcher<Rec, Rec>() },
  );
  const good = (v: number): Promise<Rec> => host.inference({ a: f32([v], [1, 1]), b: f32([10], [1, 1]) });
  const results = await Promise.allSettled([
    good(1),
    host.inference({ a: f32([2], [1, 1]) }), // missing "b" against the first item: refused by partition
    host.inference({ a: f32([3, 4], [1, 1]), b: f32([1], [1, 1]) }), // data does not fit dims: refused by rows()
    good(4),
  ]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
  expect(Array.from(((results[0] as PromiseFulfilledResult<Rec>).value.sum!.data) as Float32Array)).toEqual([11]);
  expect(Array.from(((results[3] as PromiseFulfilledResult<Rec>).value.sum!.data) as Float32Array)).toEqual([14]);
  const missing = (results[1] as PromiseRejectedResult).reason as TensorInputError;
  expect(missing).toBeInstanceOf(TensorInputError);
  expect(missing.message).toBe('ConcatBatcher: input "b": expected a tensor, as in the first item of the batch (keys a, b), got no such key');
  expect((results[2] as PromiseRejectedResult).reason.message).toBe('ConcatBatcher: input "a": expected 1 elements for dims [1, 1], got data of length 2');
  expect(calls).toEqual([2]);
  await host.stop();
});

test('items of different shapes run as separate model calls in one released batch; pre-batched rows count against maxBatchSize', async () => {
  const seen: number[][] = [];
  const host = new ModelHost(
    async (x: TensorLike) => {
      seen.push([...x.dims]);
      return x;
    },
    { maxBatchSize: 4, batcher: new ConcatBatcher() },
  );
  const [a, b, c, tooBig] = await Promise.allSettled([
    host.inference(tensor('float32', [2, 3], 1)),
    host.inference(tensor('float32', [1, 5], 2)),
    host.inference(tensor('float32', [1, 3], 3)),
    host.inference(tensor('float32', [5, 3], 4)),
  ]);
  expect(seen).toEqual([[3, 3], [1, 5]]);
  expect((a as PromiseFulfilledResult<TensorLike>).value.dims).toEqual([2, 3]);
  expect((b as PromiseFulfilledResult<TensorLike>).value.dims).toEqual([1, 5]);
  expect((c as PromiseFulfilledResult<TensorLike>).value.dims).toEqual([1, 3]);
  expect((tooBig as PromiseRejectedResult).reason).toBeInstanceOf(RangeError);
  await host.stop();
});

test('a model returning the wrong number of rows rejects that batch with BatchSizeMismatchError', async () => {
  const host = new ModelHost(async (x: TensorLike) => tensor('float32', [(x.dims[0] as number) + 1, 1]), { maxBatchSize: 4, batcher: new ConcatBatcher() });
  const all = await Promise.allSettled([host.inference(tensor('float32', [1, 2])), host.inference(tensor('float32', [1, 2], 2))]);
  for (const r of all) {
    expect((r as PromiseRejectedResult).reason).toBeInstanceOf(BatchSizeMismatchError);
    expect((r as PromiseRejectedResult).reason.message).toMatch(/expected 2 rows \(2 requests\), got 3/);
  }
  await host.stop();
});

test('PadBatcher: a masked-sum model gives each caller the sum of its own sequence; padding waste reaches the observer', async () => {
  const events: BatchEvent[] = [];
  const host = new ModelHost(
    async (b: Rec) => {
      const [n, l] = b.input!.dims as [number, number];
      const x = b.input!.data as Float32Array;
      const m = b.mask!.data as BigInt64Array;
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) for (let j = 0; j < l; j++) out[i]! += m[i * l + j] === 1n ? x[i * l + j]! : x[i * l + j] === 1000 ? 0 : Number.NaN; // pads hold padValue
      return f32(Array.from(out), [n]);
    },
    { maxBatchSize: 8, batcher: new PadBatcher<TensorLike, TensorLike, Rec>({ maskKey: 'mask', padValue: 1000 }), observer: { onBatch: (e) => events.push(e) } },
  );
  const seqs = [[1, 2, 3], [4], [5, 6]];
  const sums = await Promise.all(seqs.map((s) => host.inference(f32(s, [1, s.length]))));
  expect(sums.map((t) => Array.from(t.data as Float32Array))).toEqual([[6], [4], [11]]);
  expect(events).toHaveLength(1);
  expect(events[0]!.paddingWaste).toBeCloseTo(3 / 9);
  await host.stop();
});

test('BucketBatcher: each bucket is its own model call, outputs un-padded per caller', async () => {
  const lengths: number[] = [];
  const host = new ModelHost(
    async (x: TensorLike) => {
      lengths.push(x.dims[1] as number);
      return x;
    },
    { maxBatchSize: 8, batcher: new BucketBatcher<TensorLike>({ buckets: [4, 16], unpadAxis: 1 }) },
  );
  const inputs = [2, 12, 3, 9].map((n, i) => tensor('int32', [1, n], i));
  const outs = await Promise.all(inputs.map((t) => host.inference(t)));
  expect(lengths).toEqual([3, 12]);
  expect(outs.map((o) => Array.from(o.data as Int32Array))).toEqual(inputs.map((t) => Array.from(t.data as Int32Array)));
  await host.stop();
});

test('DictBatcher: a Silero-VAD-shaped model gives the same answer batched as one by one', async () => {
  // A stand-in for the VAD: output = mean(input) * sr / 16000 + h[0,b,0]; hn = h + 1; cn = c * 2.
  const model = async (f: Rec): Promise<Rec> => {
    const [B, T] = f.input!.dims as [number, number];
    const x = f.input!.data as Float32Array;
    const h = f.h!.data as Float32Array;
    const c = f.c!.data as Float32Array;
    const sr = Number((f.sr!.data as BigInt64Array)[0]);
    const output = new Float32Array(B);
    for (let b = 0; b < B; b++) {
      let s = 0;
      for (let t = 0; t < T; t++) s += x[b * T + t]!;
      output[b] = (s / T) * (sr / 16000) + h[b * 64]!;
    }
    return { output: f32(Array.from(output), [B, 1]), hn: f32(Array.from(h, (v) => v + 1), [2, B, 64]), cn: f32(Array.from(c, (v) => v * 2), [2, B, 64]) };
  };
  const item = (seed: number, sr: bigint): Rec => ({
    input: tensor('float32', [1, 64], seed),
    sr: { type: 'int64', data: BigInt64Array.from([sr]), dims: [] },
    h: tensor('float32', [2, 1, 64], seed + 1),
    c: tensor('float32', [2, 1, 64], seed + 2),
  });
  const calls: number[] = [];
  const host = new ModelHost(
    async (f: Rec) => {
      calls.push(f.input!.dims[0] as number);
      return model(f);
    },
    { maxBatchSize: 16, batcher: new DictBatcher<Rec, Rec>({ inputs: { input: 0, sr: 'shared', h: 1, c: 1 }, outputs: { output: 0, hn: 1, cn: 1 } }) },
  );
  const items = [item(1, 16000n), item(2, 8000n), item(3, 16000n), item(4, 16000n)];
  const batched = await Promise.all(items.map((it) => host.inference(it)));
  expect(calls).toEqual([3, 1]);
  for (let i = 0; i < items.length; i++) {
    const alone = await model(items[i]!);
    for (const key of ['output', 'hn', 'cn']) {
      expect(batched[i]![key]!.dims).toEqual(alone[key]!.dims);
      expect(Array.from(batched[i]![key]!.data as Float32Array)).toEqual(Array.from(alone[key]!.data as Float32Array));
    }
  }
  await host.stop();
});
