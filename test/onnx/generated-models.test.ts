import { InferenceSession, Tensor } from 'onnxruntime-node';
import {
  fixedBatchModel,
  int64Model,
  int64Reference,
  linearReference,
  multiIoModel,
  multiIoReference,
  seeded,
  timeMajorModel,
  timeMajorReference,
  VAR_LENGTH_BIAS,
  varLengthModel,
  varLengthReference,
} from '../support/onnx-models';

// Each generated model loads in onnxruntime and agrees with its JS reference, so the tests that
// batch them compare against something independent of the batching code.

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, digits = 5): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(actual[i]).toBeCloseTo(expected[i] as number, digits);
}

const f32 = (data: Float32Array, dims: number[]): Tensor => new Tensor('float32', data, dims);

test('multiIoModel: two batched inputs and a shared scalar, two outputs', async () => {
  const session = await InferenceSession.create(multiIoModel(3));
  const a = seeded(6, 3);
  const b = seeded(6, 4);
  const out = await session.run({ A: f32(a, [2, 3]), B: f32(b, [2, 3]), scale: f32(new Float32Array([1.5]), []) });
  expect(out.S!.dims).toEqual([2, 3]);
  expect(out.P!.dims).toEqual([2]);
  for (let r = 0; r < 2; r++) {
    const ref = multiIoReference(a.subarray(3 * r, 3 * r + 3), b.subarray(3 * r, 3 * r + 3), 1.5);
    expectClose((out.S!.data as Float32Array).subarray(3 * r, 3 * r + 3), ref.S);
    expect((out.P!.data as Float32Array)[r]).toBeCloseTo(ref.P, 5);
  }
  await session.release();
});

test('int64Model: int64 ids in, float32 and int64 out', async () => {
  const session = await InferenceSession.create(int64Model());
  const ids = new BigInt64Array([1n, 2n, 3n, 9n, 0n, 0n, 5n, 7n]);
  const out = await session.run({ ids: new Tensor('int64', ids, [2, 4]) });
  expect(out.doubled!.type).toBe('int64');
  expect(out.pooled!.dims).toEqual([2, 3]);
  for (let r = 0; r < 2; r++) {
    const ref = int64Reference(ids.subarray(4 * r, 4 * r + 4));
    expectClose((out.pooled!.data as Float32Array).subarray(3 * r, 3 * r + 3), ref.pooled);
    expect(Array.from((out.doubled!.data as BigInt64Array).subarray(4 * r, 4 * r + 4))).toEqual(ref.doubled);
  }
  await session.release();
});

test('varLengthModel: padding shows per position and changes the unmasked reduction; the mask undoes it', async () => {
  const plain = await InferenceSession.create(varLengthModel());
  const masked = await InferenceSession.create(varLengthModel({ mask: true }));
  const row = new Float32Array([0.25, -1, 2]);
  const padded = new Float32Array([0.25, -1, 2, 0, 0]);
  const ref = varLengthReference(row);

  const alone = await plain.run({ X: f32(row, [1, 3]) });
  expectClose(alone.Y!.data as Float32Array, ref.Y);
  expect((alone.total!.data as Float32Array)[0]).toBeCloseTo(ref.total, 5);

  const pad = await plain.run({ X: f32(padded, [1, 5]) });
  expectClose((pad.Y!.data as Float32Array).subarray(0, 3), ref.Y);
  expectClose((pad.Y!.data as Float32Array).subarray(3), [VAR_LENGTH_BIAS, VAR_LENGTH_BIAS]);
  expect((pad.total!.data as Float32Array)[0]).toBeCloseTo(ref.total + 2 * VAR_LENGTH_BIAS, 5);

  const withMask = await masked.run({ X: f32(padded, [1, 5]), mask: f32(new Float32Array([1, 1, 1, 0, 0]), [1, 5]) });
  expect((withMask.total!.data as Float32Array)[0]).toBeCloseTo(ref.total, 5);
  await plain.release();
  await masked.release();
});

test('timeMajorModel: batch on axis 1 of the input and of Y, axis 0 of pooled', async () => {
  const session = await InferenceSession.create(timeMajorModel());
  const T = 4;
  const N = 2;
  const x = seeded(T * N * 3, 9); // [T, N, F]
  const out = await session.run({ X: f32(x, [T, N, 3]) });
  expect(out.Y!.dims).toEqual([T, N, 2]);
  expect(out.pooled!.dims).toEqual([N, 2]);
  const y = out.Y!.data as Float32Array;
  for (let n = 0; n < N; n++) {
    const steps = Array.from({ length: T }, (_, t) => x.subarray((t * N + n) * 3, (t * N + n) * 3 + 3));
    const ref = timeMajorReference(steps);
    for (let t = 0; t < T; t++) expectClose(y.subarray((t * N + n) * 2, (t * N + n) * 2 + 2), ref.Y[t]!);
    expectClose((out.pooled!.data as Float32Array).subarray(2 * n, 2 * n + 2), ref.pooled);
  }
  await session.release();
});

test('fixedBatchModel: runs one row and refuses two', async () => {
  const session = await InferenceSession.create(fixedBatchModel());
  const x = new Float32Array([1, 2, 3, 4]);
  const out = await session.run({ X: f32(x, [1, 4]) });
  expectClose(out.Y!.data as Float32Array, linearReference(x));
  await expect(session.run({ X: f32(new Float32Array(8), [2, 4]) })).rejects.toThrow(/dimension|Got: 2/i);
  await session.release();
});
