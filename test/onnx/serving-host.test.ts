import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServingHost } from '../../src/onnx/serving-host';
import { dedicatedMachineThreads, sharedMachineThreads } from '../../src/executors/worker/thread-budget';
import { resolveWorkerOptions } from '../../src/executors/worker/options';
import { linearModel } from '../support/onnx-models';

// Thread layouts by default: leave the event loop a core; the 'dedicated' preset gives the model
// every core with spin-waiting on.

let dir: string;
let model: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-serving-'));
  model = join(dir, 'linear.onnx');
  writeFileSync(model, linearModel());
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the default 'shared' machine leaves a core to the event loop; 'dedicated' takes them all", async () => {
  const cores = availableParallelism();
  const shared = await createServingHost(model, { maxBatchSize: 4, workers: 0 });
  try {
    expect({ threads: shared.threads, machine: shared.machine }).toEqual({ threads: sharedMachineThreads(cores, 0), machine: 'shared' });
  } finally {
    await shared.stop();
  }
  const ort = await import('onnxruntime-node');
  const create = jest.spyOn(ort.InferenceSession, 'create');
  const dedicated = await createServingHost(model, { maxBatchSize: 4, workers: 0, machine: 'dedicated' });
  try {
    expect({ threads: dedicated.threads, machine: dedicated.machine }).toEqual({ threads: dedicatedMachineThreads(cores, 0), machine: 'dedicated' });
    const options = create.mock.calls.at(-1)![1] as { intraOpNumThreads?: number; extra?: unknown };
    expect(options.intraOpNumThreads).toBe(dedicatedMachineThreads(cores, 0));
    expect(options.extra).toEqual({ session: { intra_op: { allow_spinning: '1' } } });
    await expect(dedicated.inference({ X: new ort.Tensor('float32', new Float32Array(4), [1, 4]) })).resolves.toBeDefined();
  } finally {
    create.mockRestore();
    await dedicated.stop();
  }
});

test("worker threads: the preset's thread count and spinning reach every worker", async () => {
  const host = await createServingHost(model, { maxBatchSize: 4, workers: 1, machine: 'dedicated' });
  try {
    expect(host.threads).toBe(dedicatedMachineThreads(availableParallelism(), 1));
    const ort = await import('onnxruntime-node');
    const y = (await host.inference({ X: new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]) })) as Record<string, { dims: readonly number[] }>;
    expect(Object.values(y)[0]!.dims[0]).toBe(1);
  } finally {
    await host.stop();
  }
});

test('a machine that is neither shared nor dedicated is refused by name', async () => {
  await expect(createServingHost(model, { maxBatchSize: 4, machine: 'fast' as never })).rejects.toThrow(
    new TypeError("createServingHost: expected `machine` to be 'shared' or 'dedicated', got \"fast\" (string)"),
  );
});

test('a worker host without intraOpNumThreads gets (cores − 1) / workers threads per worker', () => {
  const cores = availableParallelism();
  for (const workers of [1, 2, 3]) {
    expect(resolveWorkerOptions({ module: 'm.js', workers }).intraOpNumThreads).toBe(Math.max(1, Math.floor((cores - 1) / workers)));
  }
  expect(resolveWorkerOptions({ module: 'm.js', workers: 2, intraOpNumThreads: 3 }).intraOpNumThreads).toBe(3);
});
