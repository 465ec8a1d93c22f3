import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import { HostStoppedError } from '../../src/core/errors';
import type { BatchEvent } from '../../src/core/observer';
import { createOnnxHost, ModelLoadError, UnbatchableModelError } from '../../src/onnx';
import {
  fixedBatchModel,
  int64Model,
  int64Reference,
  linearReference,
  mlpModel,
  multiIoModel,
  multiIoReference,
  seeded,
  timeMajorModel,
  timeMajorReference,
  varLengthModel,
  varLengthReference,
} from '../support/onnx-models';

const f32 = (data: Float32Array, dims: number[]): Tensor => new Tensor('float32', data, dims);

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-5): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(Math.abs((actual[i] as number) - (expected[i] as number))).toBeLessThanOrEqual(tolerance);
}

/** Collects the host's batch reports. */
function recorder(): { batches: BatchEvent[]; observer: { onBatch: (b: BatchEvent) => void } } {
  const batches: BatchEvent[] = [];
  return { batches, observer: { onBatch: (b) => batches.push(b) } };
}

test('an MLP: concurrent requests equal per-item session.run, in fewer model calls', async () => {
  const bytes = mlpModel([16, 64, 8]);
  const { batches, observer } = recorder();
  const host = await createOnnxHost(bytes, { maxBatchSize: 8, observer, session: { intraOpNumThreads: 1 } });
  expect(host.model.inputs.map((t) => t.batchAxis)).toEqual([0]);
  const xs = Array.from({ length: 20 }, (_, i) => seeded(16, 40 + i));
  const results = await Promise.all(xs.map((x) => host.inference({ X: f32(x, [1, 16]) })));
  await host.stop();

  const reference = await InferenceSession.create(bytes);
  for (let i = 0; i < xs.length; i++) {
    const alone = await reference.run({ X: f32(xs[i]!, [1, 16]) });
    expect(results[i]!.Y!).toBeInstanceOf(Tensor);
    expect(results[i]!.Y!.dims).toEqual([1, 8]);
    expectClose(results[i]!.Y!.data as Float32Array, alone.Y!.data as Float32Array);
  }
  await reference.release();
  expect(batches.reduce((a, b) => a + b.modelCalls, 0)).toBe(3); // 8 + 8 + 4 rows
  expect(host.stats.requests).toBe(20);
});

test('multi-input, multi-output with a shared scalar: equal scalars share a batch, different ones get their own', async () => {
  const { batches, observer } = recorder();
  const host = await createOnnxHost(multiIoModel(3), { maxBatchSize: 16, observer, name: 'multi' });
  expect(host.name).toBe('multi');
  const rows = Array.from({ length: 6 }, (_, i) => ({ a: seeded(3, 70 + i), b: seeded(3, 80 + i), scale: i < 4 ? 2 : -0.5 }));
  const results = await Promise.all(
    rows.map((r) => host.inference({ A: f32(r.a, [1, 3]), B: f32(r.b, [1, 3]), scale: f32(new Float32Array([r.scale]), []) })),
  );
  await host.stop();
  expect(batches).toHaveLength(1);
  expect(batches[0]!.modelCalls).toBe(2); // scale 2 and scale -0.5
  rows.forEach((r, i) => {
    const ref = multiIoReference(r.a, r.b, r.scale);
    expect(results[i]!.S!.dims).toEqual([1, 3]);
    expect(results[i]!.P!.dims).toEqual([1]);
    expectClose(results[i]!.S!.data as Float32Array, ref.S);
    expectClose(results[i]!.P!.data as Float32Array, [ref.P]);
  });
});

test('int64 in and out, pre-batched requests of several rows, plain { type, data, dims } feeds', async () => {
  const host = await createOnnxHost(int64Model(), { maxBatchSize: 8 });
  const one = BigInt64Array.from([1n, 2n, 3n, 4n]);
  const two = BigInt64Array.from([9n, 8n, 7n, 6n, 0n, 0n, 0n, 5n]);
  const [r1, r2] = await Promise.all([
    host.inference({ ids: new Tensor('int64', one, [1, 4]) }),
    host.inference({ ids: { type: 'int64', data: two, dims: [2, 4] } as unknown as Tensor }),
  ]);
  expect(host.stats.batches).toBe(1);
  expect(host.stats.rows).toBe(3);
  await host.stop();
  expect(r1!.doubled!.type).toBe('int64');
  expect(Array.from(r1!.doubled!.data as BigInt64Array)).toEqual(int64Reference(one).doubled);
  expectClose(r1!.pooled!.data as Float32Array, int64Reference(one).pooled);
  expect(r2!.pooled!.dims).toEqual([2, 3]);
  expect(Array.from(r2!.doubled!.data as BigInt64Array)).toEqual([...int64Reference(two.subarray(0, 4)).doubled, ...int64Reference(two.subarray(4)).doubled]);
  expectClose((r2!.pooled!.data as Float32Array).subarray(3), int64Reference(two.subarray(4)).pooled);
});

test('batch on axis 1: [T, 1, F] requests merge into [T, N, F]; outputs cut on axis 1 and axis 0', async () => {
  const { batches, observer } = recorder();
  const host = await createOnnxHost(timeMajorModel(), { maxBatchSize: 8, observer });
  expect(host.model.inputs[0]!.batchAxis).toBe(1);
  const T = 5;
  const items = Array.from({ length: 4 }, (_, i) => seeded(T * 3, 120 + i)); // [T, 1, 3]
  const results = await Promise.all(items.map((x) => host.inference({ X: f32(x, [T, 1, 3]) })));
  await host.stop();
  expect(batches.map((b) => [b.requests, b.modelCalls])).toEqual([[4, 1]]);
  items.forEach((x, i) => {
    const ref = timeMajorReference(Array.from({ length: T }, (_, t) => x.subarray(3 * t, 3 * t + 3)));
    expect(results[i]!.Y!.dims).toEqual([T, 1, 2]);
    expectClose(results[i]!.Y!.data as Float32Array, ref.Y.flat());
    expect(results[i]!.pooled!.dims).toEqual([1, 2]);
    expectClose(results[i]!.pooled!.data as Float32Array, ref.pooled);
  });
});

test('a variable-length axis without a padding batcher: each length runs in its own sub-batch, unpadded', async () => {
  const { batches, observer } = recorder();
  const host = await createOnnxHost(varLengthModel(), { maxBatchSize: 8, observer });
  const rows = [3, 5, 3, 5, 2].map((len, i) => seeded(len, 150 + i));
  const results = await Promise.all(rows.map((r) => host.inference({ X: f32(r, [1, r.length]) })));
  await host.stop();
  expect(batches[0]!.modelCalls).toBe(3); // lengths 3, 5, 2
  expect(batches[0]!.paddingWaste).toBe(0);
  rows.forEach((r, i) => {
    const ref = varLengthReference(r);
    expectClose(results[i]!.Y!.data as Float32Array, ref.Y);
    expectClose(results[i]!.total!.data as Float32Array, [ref.total]);
  });
});

test('outputs: only the named outputs are computed and returned', async () => {
  const host = await createOnnxHost(multiIoModel(3), { maxBatchSize: 4, outputs: ['P'] });
  const r = await host.inference({ A: f32(seeded(3, 1), [1, 3]), B: f32(seeded(3, 2), [1, 3]), scale: f32(new Float32Array([1]), []) });
  await host.stop();
  expect(Object.keys(r)).toEqual(['P']);
  await expect(createOnnxHost(multiIoModel(3), { maxBatchSize: 4, outputs: ['Q'] })).rejects.toThrow(
    new TypeError('createOnnxHost: `outputs` names "Q", which the model does not have; its outputs are "S", "P"'),
  );
});

test('bad requests fail alone: a missing key at inference(), a wrong shape in its own sub-batch', async () => {
  const { batches, observer } = recorder();
  const host = await createOnnxHost(multiIoModel(3), { maxBatchSize: 8, observer });
  const scale = f32(new Float32Array([1]), []);
  const missing = host.inference({ A: f32(seeded(3, 1), [1, 3]), scale } as never).catch((e: unknown) => e);
  const good = host.inference({ A: f32(seeded(3, 1), [1, 3]), B: f32(seeded(3, 2), [1, 3]), scale });
  const wrongShape = host.inference({ A: f32(seeded(4, 1), [1, 4]), B: f32(seeded(4, 2), [1, 4]), scale }).catch((e: unknown) => e);
  const err = await missing;
  expect(err).toBeInstanceOf(TensorInputError);
  expect((err as Error).message).toBe('DictBatcher: input "B": expected a tensor (it is listed in `inputs`), got no such key');
  await expect(good).resolves.toHaveProperty('S');
  // [1, 4] does not fit the model's [N, 3]: its sub-batch fails in onnxruntime, the other one runs.
  expect(String(await wrongShape)).toMatch(/dimension|Got invalid dimensions/i);
  expect(batches.map((b) => [b.modelCalls, b.succeeded, b.failed])).toEqual([[2, 1, 1]]);
  await host.stop();
});

test('stop() drains, then releases the session', async () => {
  const host = await createOnnxHost(mlpModel([4, 8, 2]), { maxBatchSize: 4 });
  const pending = host.inference({ X: f32(seeded(4, 3), [1, 4]) });
  await host.stop();
  await expect(pending).resolves.toHaveProperty('Y');
  await expect(host.inference({ X: f32(seeded(4, 3), [1, 4]) })).rejects.toThrow(HostStoppedError);
  // A released session refuses to run.
  await expect(host.session.run({ X: f32(seeded(4, 3), [1, 4]) })).rejects.toThrow();
});

describe('a model whose batch is fixed to 1', () => {
  test('is refused with an error that names the input, its dims and the way out', async () => {
    const err = await createOnnxHost(fixedBatchModel(), { maxBatchSize: 8 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnbatchableModelError);
    expect((err as UnbatchableModelError).input).toBe('X');
    expect((err as UnbatchableModelError).dims).toEqual([1, 4]);
    expect((err as Error).message).toBe(
      'createOnnxHost: the model cannot take batches: input "X" has dims [1, 4]: its batch dimension is fixed to 1, and no input has a symbolic (dynamic) dimension. ' +
        'Pass `maxBatchSize: 1` to run it unbatched (one request per model call), or name a symbolic batch axis in `batchAxes` if the model does accept batches.',
    );
  });

  test('runs one request per model call with maxBatchSize: 1', async () => {
    const { batches, observer } = recorder();
    const host = await createOnnxHost(fixedBatchModel(), { maxBatchSize: 1, observer });
    const xs = [seeded(4, 5), seeded(4, 6), seeded(4, 7)];
    const results = await Promise.all(xs.map((x) => host.inference({ X: f32(x, [1, 4]) })));
    expect(batches.map((b) => b.requests)).toEqual([1, 1, 1]);
    xs.forEach((x, i) => expectClose(results[i]!.Y!.data as Float32Array, linearReference(x)));
    // Raising maxBatchSize later cannot make it batch: a batch of 2 is refused with the reason.
    host.configure({ maxBatchSize: 2 });
    const both = await Promise.allSettled([host.inference({ X: f32(xs[0]!, [1, 4]) }), host.inference({ X: f32(xs[1]!, [1, 4]) })]);
    expect(both.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    for (const s of both) {
      expect((s as PromiseRejectedResult).reason).toEqual(
        new RangeError('onnx-model: this model cannot take batches, so maxBatchSize must stay 1; got a batch of 2 requests'),
      );
    }
    await host.stop();
  });
});

describe('errors', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'microbatch-onnx-host-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a missing file, garbage bytes', async () => {
    const missing = join(dir, 'missing.onnx');
    const err = (await createOnnxHost(missing, { maxBatchSize: 4 }).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err.message).toBe(`loadSession: no model file at ${JSON.stringify(missing)}: ENOENT`);
    const garbage = join(dir, 'garbage.onnx');
    writeFileSync(garbage, Buffer.from('definitely not protobuf'));
    await expect(createOnnxHost(garbage, { maxBatchSize: 4 })).rejects.toThrow(ModelLoadError);
  });

  test('bad options are refused before the model is loaded', async () => {
    await expect(createOnnxHost(mlpModel([4, 2]), { maxBatchSize: 4, maxBatchsize: 3 } as never)).rejects.toThrow(
      /^createOnnxHost: unknown option `maxBatchsize`; the known options are .*`session`, `batchAxes`, `outputs`$/,
    );
    await expect(createOnnxHost(mlpModel([4, 2]), null as never)).rejects.toThrow(TypeError);
    await expect(createOnnxHost(mlpModel([4, 2]), { maxBatchSize: 0 })).rejects.toThrow(
      new RangeError('createOnnxHost: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'),
    );
    // A path that does not exist proves the options were checked before any load was tried.
    await expect(createOnnxHost('/nonexistent/model.onnx', { maxBatchSize: 4, maxDelayMs: -1 })).rejects.toThrow(RangeError);
  });
});
