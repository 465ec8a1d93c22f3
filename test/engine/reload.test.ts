import { InferenceSession, Tensor } from 'onnxruntime-node';
import { ModelHost } from '../../src/engine/model-host';
import { HostStoppedError } from '../../src/core/errors';
import type { BatchEvent } from '../../src/core/observer';
import { ControlledModel, settle, track } from '../support/controlled-model';
import { linearModel, linearReference } from '../support/onnx-models';

/** A controlled model as an executor whose start and stop the test can see. */
function executor(name: string, startError?: Error) {
  const model = new ControlledModel<number, string>();
  const log: string[] = [];
  return {
    model,
    log,
    executor: {
      run: (xs: readonly number[]) => model.fn(xs),
      start: async () => {
        log.push(`${name} start`);
        if (startError !== undefined) throw startError;
      },
      stop: async () => {
        log.push(`${name} stop`);
      },
    },
  };
}

describe('reload: a new model without stopping', () => {
  test('new batches go to the new model once it is ready; the running batch finishes on the old one, which is stopped after it', async () => {
    const a = executor('a');
    const b = executor('b');
    const host = new ModelHost(a.executor, { maxBatchSize: 4, maxConcurrentBatches: 2 });
    const first = track(host.inference(1));
    await settle();
    expect(a.model.sizes).toEqual([1]); // running on a
    const reloaded = track(host.reload(b.executor));
    await settle();
    expect(reloaded.state).toBe('resolved');
    const second = track(host.inference(2));
    await settle();
    expect(b.model.sizes).toEqual([1]); // the next batch runs on b while a still runs
    expect(a.log).toEqual(['a start']); // a is not stopped while its batch runs
    b.model.answer(0, (x) => `b${x}`);
    a.model.answer(0, (x) => `a${x}`);
    await settle();
    expect([first.value, second.value]).toEqual(['a1', 'b2']);
    expect(a.log).toEqual(['a start', 'a stop']);
    expect(b.log).toEqual(['b start']);
    await host.stop();
    expect(b.log).toEqual(['b start', 'b stop']);
  });

  test('a new model that fails to start is stopped, reload() rejects with the cause, and the old one keeps serving', async () => {
    const a = executor('a');
    const b = executor('b', new Error('no such file'));
    const host = new ModelHost(a.executor, { maxBatchSize: 4 });
    const err = (await host.reload(b.executor).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('microbatch.reload: the new model could not be started, so the current one keeps serving: no such file');
    expect((err.cause as Error).message).toBe('no such file');
    expect(b.log).toEqual(['b start', 'b stop']);
    const p = track(host.inference(3));
    await settle();
    a.model.answer(0, (x) => `a${x}`);
    await settle();
    expect(p.value).toBe('a3');
    await host.stop();
  });

  test('the new model warms up before it takes traffic; a stopped host refuses to reload; bad arguments are named', async () => {
    const a = executor('a');
    const b = executor('b');
    const events: BatchEvent[] = [];
    const host = new ModelHost(a.executor, { maxBatchSize: 2, warmup: { samples: [0], batchSizes: [2] }, observer: { onBatch: (e) => events.push(e) } });
    const started = host.start();
    await settle();
    a.model.answer(0, () => 'warm');
    await started;
    const reloaded = track(host.reload(b.executor));
    await settle();
    expect(b.model.sizes).toEqual([2]); // b's warm-up batch, before the swap
    expect(reloaded.state).toBe('pending');
    b.model.answer(0, () => 'warm');
    await settle();
    expect(reloaded.state).toBe('resolved');
    expect(events.map((e) => e.reason)).toEqual(['warmup', 'warmup']);
    await expect(host.reload(42 as never)).rejects.toThrow(
      new TypeError('microbatch.reload: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch), got 42 (number)'),
    );
    await host.stop();
    await expect(host.reload(b.executor)).rejects.toBeInstanceOf(HostStoppedError);
  });

  test('the version: "1" at first, counted up by each reload unless named; a failed reload keeps it; a bad label is refused before loading', async () => {
    const a = executor('a');
    const host = new ModelHost(a.executor, { maxBatchSize: 2 });
    expect(host.version).toBe('1');
    await host.reload(executor('b').executor);
    expect(host.version).toBe('2');
    await host.reload(executor('c').executor, { version: '2024-06-01' });
    expect(host.version).toBe('2024-06-01');
    await host.reload(executor('d').executor);
    expect(host.version).toBe('4'); // the fourth model served
    await expect(host.reload(executor('e', new Error('bad file')).executor, { version: '5' })).rejects.toThrow(/could not be started/);
    expect(host.version).toBe('4');
    const f = executor('f');
    await expect(host.reload(f.executor, { version: 'a/b' })).rejects.toThrow(
      new TypeError('microbatch.reload: expected `version` to be a non-empty string without "/", got "a/b" (string)'),
    );
    await expect(host.reload(f.executor, { version: '' })).rejects.toThrow(TypeError);
    await expect(host.reload(f.executor, { versoin: '5' } as never)).rejects.toThrow(new TypeError('microbatch.reload: unknown option `versoin`; the known options are `version`'));
    await expect(host.reload(f.executor, 'v5' as never)).rejects.toThrow(new TypeError('microbatch.reload: expected `options` to be an object such as { version }, got "v5" (string)'));
    expect(f.log).toEqual([]); // refused before it was started
    expect(host.version).toBe('4');
    await host.stop();
  });

  test('a steady stream across a reload on real onnxruntime models: every request answered exactly once, by the old model or the new, never the old after the new', async () => {
    const old = await InferenceSession.create(linearModel(4, 3, 1), { intraOpNumThreads: 1 });
    const next = await InferenceSession.create(linearModel(4, 3, 2), { intraOpNumThreads: 1 });
    const run = (session: InferenceSession) => async (rows: readonly Float32Array[]) => {
      const data = new Float32Array(rows.length * 4);
      rows.forEach((r, i) => data.set(r, i * 4));
      const y = (await session.run({ X: new Tensor('float32', data, [rows.length, 4]) })).Y as Tensor;
      return rows.map((_, i) => Array.from((y.data as Float32Array).subarray(i * 3, i * 3 + 3)));
    };
    let oldStopped = false;
    const host = new ModelHost<Float32Array, number[]>({ run: run(old), stop: async () => void (oldStopped = true) }, { maxBatchSize: 8 });
    const answers: Array<{ sent: number; value: number[] } | { sent: number; error: Error }> = [];
    const sends: Array<Promise<void>> = [];
    const input = (i: number) => Float32Array.from([i, i + 1, i + 2, i + 3]);
    let reload: Promise<void> | undefined;
    for (let i = 0; i < 120; i++) {
      if (i === 40) reload = host.reload(run(next));
      sends.push(
        host.inference(input(i)).then(
          (value) => void answers.push({ sent: i, value }),
          (error: Error) => void answers.push({ sent: i, error }),
        ),
      );
      if (i % 4 === 3) await new Promise((r) => setImmediate(r)); // a stream, not one burst
    }
    await Promise.all(sends);
    await reload;
    expect(answers).toHaveLength(120);
    expect(new Set(answers.map((a) => a.sent)).size).toBe(120); // each exactly once
    const by = answers
      .sort((x, y) => x.sent - y.sent)
      .map((a) => {
        if ('error' in a) throw a.error;
        const close = (ref: number[]) => ref.every((v, k) => Math.abs(v - (a.value[k] as number)) < 1e-4);
        if (close(linearReference(input(a.sent), 4, 3, 1))) return 'old';
        if (close(linearReference(input(a.sent), 4, 3, 2))) return 'new';
        return 'neither';
      });
    expect(by).not.toContain('neither');
    const firstNew = by.indexOf('new');
    expect(firstNew).toBeGreaterThan(0);
    expect(by.slice(firstNew)).not.toContain('old'); // released in queue order: no old answer after the first new one
    expect(by.at(-1)).toBe('new'); // requests sent after reload() resolved run on the new model
    expect(host.stats.rejected).toEqual({ queueFull: 0, deadline: 0, aborted: 0, stopped: 0, error: 0 });
    expect(oldStopped).toBe(true);
    await host.stop();
    await old.release();
    await next.release();
  });
});

describe('createOnnxHost: reload a new model file', () => {
  test('a new version with the same inputs and outputs takes over; one that does not fit is refused and the current one keeps serving', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { createOnnxHost } = await import('../../src/onnx');
    const dir = mkdtempSync(join(tmpdir(), 'mb-reload-'));
    try {
      const v1 = join(dir, 'v1.onnx');
      const v2 = join(dir, 'v2.onnx');
      writeFileSync(v1, linearModel(4, 3, 1));
      writeFileSync(v2, linearModel(4, 3, 2));
      const host = await createOnnxHost(v1, { maxBatchSize: 4, session: { intraOpNumThreads: 1 } });
      const x = () => ({ X: new Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]) });
      const y = async () => Array.from((await host.inference(x())).Y!.data as Float32Array);
      const close = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - (b[i] as number)) < 1e-4);
      expect(close(await y(), linearReference([1, 2, 3, 4], 4, 3, 1))).toBe(true);
      const firstSession = host.session;
      await host.reload(v2, { version: 'v2' });
      expect(host.version).toBe('v2');
      expect(close(await y(), linearReference([1, 2, 3, 4], 4, 3, 2))).toBe(true);
      await expect(host.reload(v2, { sesion: {} } as never)).rejects.toThrow(new TypeError('v1.onnx.reload: unknown option `sesion`; the known options are `version`, `session`'));
      expect(host.session).not.toBe(firstSession);
      const mlp = join(dir, 'mlp.onnx');
      const { mlpModel } = await import('../support/onnx-models');
      writeFileSync(mlp, mlpModel([8, 4, 2]));
      await expect(host.reload(mlp)).rejects.toThrow(TypeError);
      await expect(host.reload(mlp)).rejects.toThrow(
        'v1.onnx.reload: the new model does not fit the host made for the current one (inputs were X: float32[?,4], batch axis 0; now X: float32[?,8], batch axis 0); make a new host for it',
      );
      expect(close(await y(), linearReference([1, 2, 3, 4], 4, 3, 2))).toBe(true); // v2 still serves
      await expect(host.reload(join(dir, 'missing.onnx'))).rejects.toThrow(/no model file/);
      await host.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
