import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOnnxHost } from '../../src/onnx/create-onnx-host';
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
  const shared = await createOnnxHost(model, { maxBatchSize: 4, workers: 0 });
  try {
    expect({ threads: shared.threads, machine: shared.machine }).toEqual({ threads: sharedMachineThreads(cores, 0), machine: 'shared' });
  } finally {
    await shared.stop();
  }
  const ort = await import('onnxruntime-node');
  const create = jest.spyOn(ort.InferenceSession, 'create');
  const dedicated = await createOnnxHost(model, { maxBatchSize: 4, workers: 0, machine: 'dedicated' });
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
  const host = await createOnnxHost(model, { maxBatchSize: 4, workers: 1, machine: 'dedicated' });
  try {
    expect(host.threads).toBe(dedicatedMachineThreads(availableParallelism(), 1));
    const ort = await import('onnxruntime-node');
    const y = (await host.inference({ X: new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]) })) as Record<string, { dims: readonly number[] }>;
    expect(Object.values(y)[0]!.dims[0]).toBe(1);
  } finally {
    await host.stop();
  }
});

test("worker threads: the merged batch moves to the worker, and the callers' own tensors stay whole", async () => {
  const host = await createOnnxHost(model, { maxBatchSize: 4, workers: 1 });
  try {
    const ort = await import('onnxruntime-node');
    const inputs = [1, 2, 3].map((k) => new ort.Tensor('float32', Float32Array.from([k, k, k, k]), [1, 4]));
    const direct = await Promise.all(inputs.map((x) => host.inference({ X: x })));
    for (const [k, x] of inputs.entries()) {
      expect(Array.from(x.data as Float32Array)).toEqual([k + 1, k + 1, k + 1, k + 1]); // not detached
      const y = Object.values(direct[k] as Record<string, { data: Float32Array }>)[0]!;
      expect(y.data.length).toBeGreaterThan(0);
    }
    // The same inputs again give the same answers: nothing was emptied by the first crossing.
    const again = await Promise.all(inputs.map((x) => host.inference({ X: x })));
    expect(again.map((r) => Array.from(Object.values(r as Record<string, { data: Float32Array }>)[0]!.data))).toEqual(
      direct.map((r) => Array.from(Object.values(r as Record<string, { data: Float32Array }>)[0]!.data)),
    );
  } finally {
    await host.stop();
  }
});

test('a machine that is neither shared nor dedicated is refused by name', async () => {
  await expect(createOnnxHost(model, { maxBatchSize: 4, machine: 'fast' as never })).rejects.toThrow(
    new TypeError("createOnnxHost: expected `machine` to be 'shared' or 'dedicated', got \"fast\" (string)"),
  );
});

test('createServingHost (deprecated: createOnnxHost with workers) still serves a model file in one worker, named without .onnx', async () => {
  const host = await createServingHost(model, { maxBatchSize: 4, threads: 1 });
  try {
    expect({ name: host.name, executor: host.executor, workers: host.workers, modelPath: host.modelPath }).toEqual({ name: 'linear', executor: 'worker', workers: 1, modelPath: model });
  } finally {
    await host.stop();
  }
});

test('a worker host without intraOpNumThreads gets (cores − 1) / workers threads per worker', () => {
  const cores = availableParallelism();
  for (const workers of [1, 2, 3]) {
    expect(resolveWorkerOptions({ module: 'm.js', workers }).intraOpNumThreads).toBe(Math.max(1, Math.floor((cores - 1) / workers)));
  }
  expect(resolveWorkerOptions({ module: 'm.js', workers: 2, intraOpNumThreads: 3 }).intraOpNumThreads).toBe(3);
});

describe('reload: a new model file while serving', () => {
  const input = (i: number): Float32Array => Float32Array.from([i % 16, (i % 16) + 1, -(i % 5), 1]); // small, so float32 stays within 1e-4
  const close = (a: ArrayLike<number>, b: readonly number[]): boolean => b.every((v, k) => Math.abs(v - (a[k] as number)) < 1e-4);

  test.each([1, 0])('workers: %i — a steady stream across the reload is answered exactly once, by v1 or v2, never v1 after v2; the new file and version show', async (workers) => {
    const { linearReference } = await import('../support/onnx-models');
    const ort = await import('onnxruntime-node');
    const v2 = join(dir, `v2-${workers}.onnx`);
    writeFileSync(v2, linearModel(4, 3, 2));
    const host = await createOnnxHost(model, { maxBatchSize: 8, workers, threads: 1 });
    try {
      const answers: Array<{ sent: number; y: Float32Array }> = [];
      const sends: Array<Promise<void>> = [];
      let reloaded = false;
      let reload: Promise<void> | undefined;
      let sent = 0;
      // A stream that goes on until 30 requests after the new model took over (workers take a while to start).
      for (let after = 0; after < 30; sent++) {
        if (sent === 30) reload = host.reload(v2).then(() => void (reloaded = true));
        if (reloaded) after++;
        const i = sent;
        const feeds = { X: new ort.Tensor('float32', input(i), [1, 4]) };
        sends.push(host.inference(feeds).then((out) => void answers.push({ sent: i, y: out.Y!.data as Float32Array })));
        if (i % 3 === 2) await new Promise((r) => setTimeout(r, 1));
      }
      await Promise.all(sends);
      await reload;
      expect(new Set(answers.map((a) => a.sent)).size).toBe(sent);
      const by = answers
        .sort((a, b) => a.sent - b.sent)
        .map((a) => (close(a.y, linearReference(input(a.sent), 4, 3, 1)) ? 'v1' : close(a.y, linearReference(input(a.sent), 4, 3, 2)) ? 'v2' : 'neither'));
      expect(by).not.toContain('neither');
      const firstNew = by.indexOf('v2');
      expect(firstNew).toBeGreaterThan(0);
      expect(by.slice(firstNew)).not.toContain('v1');
      expect({ version: host.version, modelPath: host.modelPath }).toEqual({ version: '2', modelPath: v2 });
      const after = await host.inference({ X: new ort.Tensor('float32', input(7), [1, 4]) });
      expect(close(after.Y!.data as Float32Array, linearReference(input(7), 4, 3, 2))).toBe(true);
      expect(host.stats.rejected).toEqual({ queueFull: 0, deadline: 0, aborted: 0, stopped: 0, error: 0 });
    } finally {
      await host.stop();
    }
  });

  test('workers: a model that does not fit, bytes, or a missing file are refused, and the current version keeps serving', async () => {
    const { mlpModel } = await import('../support/onnx-models');
    const ort = await import('onnxruntime-node');
    const mlp = join(dir, 'mlp.onnx');
    writeFileSync(mlp, mlpModel([8, 4, 2]));
    const host = await createOnnxHost(model, { maxBatchSize: 4, workers: 1, threads: 1, name: 'lin' });
    try {
      await expect(host.reload(mlp)).rejects.toThrow(
        new TypeError('lin.reload: the new model does not fit the host made for the current one (inputs were X: float32[?,4], batch axis 0; now X: float32[?,8], batch axis 0); make a new host for it'),
      );
      await expect(host.reload(linearModel() as never)).rejects.toThrow(
        /^lin\.reload: expected `modelPath` to be the path of an \.onnx file \(a serving host loads models by path\), got a Buffer of length \d+$/,
      );
      await expect(host.reload(join(dir, 'missing.onnx'))).rejects.toThrow(/no model file/);
      await expect(host.reload(model, { version: 'a/b' })).rejects.toThrow(new TypeError('lin.reload: expected `version` to be a non-empty string without "/", got "a/b" (string)'));
      expect({ version: host.version, modelPath: host.modelPath }).toEqual({ version: '1', modelPath: model });
      await expect(host.inference({ X: new ort.Tensor('float32', new Float32Array(4), [1, 4]) })).resolves.toBeDefined();
    } finally {
      await host.stop();
    }
  });

  test('warmup: true on the worker route runs zero batches of every default size before the host is returned', async () => {
    const sizes: number[] = [];
    const host = await createOnnxHost(model, { maxBatchSize: 4, workers: 1, threads: 1, warmup: true, observer: { onBatch: (e) => void (e.reason === 'warmup' && sizes.push(e.rows)) } });
    try {
      expect(sizes).toEqual([1, 2, 4]);
      expect(host.stats.batches).toBe(0);
    } finally {
      await host.stop();
    }
  });
});
