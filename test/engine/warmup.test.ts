import { Tensor } from 'onnxruntime-node';
import { ModelHost } from '../../src/engine/model-host';
import type { BatchEvent } from '../../src/core/observer';
import { createOnnxHost } from '../../src/onnx';
import { ControlledModel, settle, track } from '../support/controlled-model';
import { linearModel } from '../support/onnx-models';

describe('warmup: batches run before the host takes traffic', () => {
  test('start() resolves only after one batch of each size ran; they are reported, not counted; requests that came meanwhile wait', async () => {
    const model = new ControlledModel<number, number>();
    const events: BatchEvent[] = [];
    const host = new ModelHost(model.fn, { maxBatchSize: 8, warmup: { samples: [7, 9] }, observer: { onBatch: (e) => events.push(e) } });
    const started = track(host.start());
    const early = track(host.inference(1));
    for (const size of [1, 2, 4, 8]) {
      await settle();
      expect(model.sizes.at(-1)).toBe(size);
      expect(started.state).toBe('pending');
      model.answer(model.calls.length - 1, (x) => x);
    }
    await settle();
    expect(model.calls[3]!.items).toEqual([7, 9, 7, 9, 7, 9, 7, 9]); // samples cycled to fill the batch
    expect(started.state).toBe('resolved');
    expect(model.sizes).toEqual([1, 2, 4, 8, 1]); // the early request ran after the warm-up
    model.answer(4, (x) => x * 100);
    await settle();
    expect(early.value).toBe(100);
    expect(events.map((e) => e.reason)).toEqual(['warmup', 'warmup', 'warmup', 'warmup', 'idle']);
    expect(host.stats).toMatchObject({ batches: 1, requests: 1 });
    await host.stop();
  });

  test('a warm-up batch that fails fails start(), and requests waiting for it, with the cause', async () => {
    const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => (x < 0 ? new Error('negative input') : x)), {
      maxBatchSize: 4,
      warmup: { samples: [1, -1], batchSizes: [1, 2] },
    });
    const waiting = host.inference(5);
    const err = (await host.start().catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('microbatch: the warm-up batch of 2 failed, so the host does not start: negative input');
    expect((err.cause as Error).message).toBe('negative input');
    await expect(waiting).rejects.toBe(err);
    await expect(host.inference(1)).rejects.toBe(err);
  });

  test('on a real onnxruntime model, createOnnxHost warms up before it resolves', async () => {
    const events: BatchEvent[] = [];
    const sample = { X: new Tensor('float32', new Float32Array(4), [1, 4]) };
    const host = await createOnnxHost(linearModel(), {
      maxBatchSize: 4,
      session: { intraOpNumThreads: 1 },
      warmup: { samples: [sample] },
      observer: { onBatch: (e) => events.push(e) },
    });
    expect(events.map((e) => [e.reason, e.rows])).toEqual([
      ['warmup', 1],
      ['warmup', 2],
      ['warmup', 4],
    ]);
    expect(host.stats.batches).toBe(0);
    const y = await host.inference({ X: new Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]) });
    expect(Object.values(y)[0]!.dims).toEqual([1, 3]);
    await host.stop();
  });

  test('createOnnxHost with warmup: true makes its samples from the model (zeros, batch axis 1) and warms up every default size', async () => {
    const events: BatchEvent[] = [];
    const host = await createOnnxHost(linearModel(), { maxBatchSize: 8, session: { intraOpNumThreads: 1 }, warmup: true, observer: { onBatch: (e) => events.push(e) } });
    expect(events.map((e) => [e.reason, e.rows])).toEqual([
      ['warmup', 1],
      ['warmup', 2],
      ['warmup', 4],
      ['warmup', 8],
    ]);
    expect(host.stats.batches).toBe(0);
    await host.stop();
    await expect(createOnnxHost(linearModel(), { maxBatchSize: 8, warmup: { samples: [] } })).rejects.toThrow(
      new TypeError('createOnnxHost: expected `warmup.samples` to be a non-empty array of requests, got an array of length 0'),
    );
  });

  test('bad warmup options are refused with what was expected and what came', () => {
    const make = (warmup: unknown) => () => new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 4, warmup: warmup as never });
    expect(make([1])).toThrow(new TypeError('ModelHost: expected `warmup` to be an object { samples, batchSizes? }, got an array of length 1'));
    expect(make({ samples: [] })).toThrow(new TypeError('ModelHost: expected `warmup.samples` to be a non-empty array of requests, got an array of length 0'));
    expect(make({ samples: [1], sizes: [2] })).toThrow(new TypeError('ModelHost: warmup: unknown option `sizes`; the known options are `samples`, `batchSizes`'));
    expect(make({ samples: [1], batchSizes: [8] })).toThrow(new RangeError('ModelHost: expected `warmup.batchSizes` to be batch sizes from 1 to maxBatchSize (4), got 8 (number)'));
  });
});
