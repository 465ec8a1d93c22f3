import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import type { BatchEvent } from '../../src/core/observer';
import { createHost } from '../../src/api/create-host';
import { linearModel, mlpModel, seeded } from '../support/onnx-models';

// A real onnxruntime model in worker threads gives the same numbers as the same model run inline,
// while requests from separate callers still share batches.

const MODULE = join(__dirname, '../fixtures/workers/onnx.worker.ts');
const F = 8;
let dir: string;
let linearPath: string;
let mlpPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-onnx-'));
  linearPath = join(dir, 'linear.onnx');
  mlpPath = join(dir, 'mlp.onnx');
  writeFileSync(linearPath, linearModel(F, 3));
  writeFileSync(mlpPath, mlpModel([F, 32, 32, 4]));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rows = (n: number): Float32Array[] => Array.from({ length: n }, (_, i) => seeded(F, 100 + i));

/** The reference: the same model file, run inline on each row alone. */
async function inline(path: string, xs: readonly Float32Array[]): Promise<Float32Array[]> {
  const session = await InferenceSession.create(path);
  try {
    const out: Float32Array[] = [];
    for (const x of xs) out.push(new Float32Array((await session.run({ X: new Tensor('float32', x.slice(), [1, F]) })).Y!.data as Float32Array));
    return out;
  } finally {
    await session.release();
  }
}

function expectRowsClose(actual: readonly ArrayLike<number>[], expected: readonly ArrayLike<number>[]): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((row, i) => {
    expect(row.length).toBe(expected[i]!.length);
    for (let j = 0; j < row.length; j++) expect(row[j]).toBeCloseTo(expected[i]![j]!, 5);
  });
}

test.each([1, 2])('%i worker(s): an MLP gives the inline results, and concurrent callers share batches', async (workers) => {
  const batches: BatchEvent[] = [];
  const host = await createHost<Float32Array, Float32Array>(MODULE, {
    workers,
    intraOpNumThreads: 1,
    workerData: { modelPath: mlpPath },
    maxBatchSize: 16,
    observer: { onBatch: (e) => batches.push(e) },
  });
  try {
    const xs = rows(40);
    const expected = await inline(mlpPath, xs);
    const got = await Promise.all(xs.map((x) => host.inference(x)));
    expectRowsClose(got, expected);
    // Callers are answered with rows of their own, and the inputs were not moved away from them.
    expect(xs.every((x) => x.length === F)).toBe(true);
    expect(batches.length).toBeLessThan(xs.length);
    expect(Math.max(...batches.map((b) => b.requests))).toBeGreaterThan(1);
    expect(host.options.maxConcurrentBatches).toBe(workers);
  } finally {
    await host.stop();
  }
});

test('tensors in, tensors out: a ConcatBatcher batch crosses as an onnxruntime Tensor and comes back as one', async () => {
  const host = await createHost<Tensor, Tensor, Tensor, Tensor>(MODULE, {
    export: 'tensors',
    workers: 2,
    intraOpNumThreads: 1,
    transferBatch: true, // the ConcatBatcher builds a fresh batch tensor, so moving it is safe
    workerData: { modelPath: linearPath },
    maxBatchSize: 8,
    batcher: new ConcatBatcher<Tensor, Tensor>(),
  });
  try {
    const xs = rows(20);
    const expected = await inline(linearPath, xs);
    const inputs = xs.map((x) => new Tensor('float32', x, [1, F]));
    const got = await Promise.all(inputs.map((t) => host.inference(t)));
    for (const y of got) {
      expect(y).toBeInstanceOf(Tensor);
      expect(y.dims).toEqual([1, 3]);
    }
    expectRowsClose(
      got.map((y) => y.data as Float32Array),
      expected,
    );
    // The callers' tensors are intact: only the merged batch was moved to the worker.
    expect(inputs.every((t) => (t.data as Float32Array).length === F)).toBe(true);
  } finally {
    await host.stop();
  }
});
