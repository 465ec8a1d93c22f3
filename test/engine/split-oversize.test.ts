import { InferenceSession, Tensor } from 'onnxruntime-node';
import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import { ListBatcher } from '../../src/batchers/list-batcher';
import { AbortError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import { ModelHost } from '../../src/engine/model-host';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { ControlledModel, settle, track } from '../support/controlled-model';
import { linearModel, linearReference, seeded } from '../support/onnx-models';

const rowsTensor = (values: number[]): TensorLike => ({ type: 'float32', data: Float32Array.from(values), dims: [values.length, 1] });
const valuesOf = (t: TensorLike): number[] => Array.from(t.data as Float32Array);

// An injected clock: the test drives the model by hand, and on the real clock a loaded machine
// could make the host take a slow hand for a blocked event loop.
function host(options: { maxBatchSize: number; splitOversize?: boolean; clock?: ManualClock }) {
  const model = new ControlledModel<TensorLike, TensorLike>();
  const h = new ModelHost<TensorLike, TensorLike, TensorLike, TensorLike>((batch: TensorLike): Promise<TensorLike> => model.fn([batch]).then((r) => r[0] as TensorLike), {
    batcher: new ConcatBatcher(),
    splitOversize: true,
    clock: new ManualClock(),
    ...options,
  });
  /** Answers the oldest unanswered call by doubling every value (or with an error). */
  let answered = 0;
  const answerNext = (error?: Error): void => {
    const call = model.calls[answered++];
    if (call === undefined) throw new Error('no model call to answer');
    if (error !== undefined) return call.reject(error);
    const x = call.items[0] as TensorLike;
    call.resolve([{ type: 'float32', data: Float32Array.from(valuesOf(x), (v) => v * 2), dims: [...x.dims] }]);
  };
  return { h, model, answerNext, batchRows: () => model.calls.map((c) => (c.items[0] as TensorLike).dims[0]) };
}

describe('splitOversize: a request of more rows than maxBatchSize runs in parts and is answered whole', () => {
  test('10 rows with maxBatchSize 4 run as 4 + 4 + 2 in consecutive batches; the answer is joined in order', async () => {
    const { h, answerNext, batchRows } = host({ maxBatchSize: 4 });
    const whole = track(h.inference(rowsTensor([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])));
    const small = track(h.inference(rowsTensor([100]))); // queued behind the parts: FIFO holds
    for (let i = 0; i < 3; i++) {
      await settle();
      answerNext();
    }
    await settle();
    expect(batchRows()).toEqual([4, 4, 3]); // the last part (2 rows) shares its batch with `small`
    expect(whole.state).toBe('resolved');
    expect(valuesOf(whole.value!)).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
    expect(whole.value!.dims).toEqual([10, 1]);
    expect(valuesOf(small.value!)).toEqual([200]);
    // Each part counts as a request in the stats.
    expect(h.stats).toMatchObject({ requests: 4, rows: 11, batches: 3 });
    await h.stop();
  });

  test('an error in one part rejects the request once, with that error, and the parts still queued never run', async () => {
    const { h, answerNext, batchRows } = host({ maxBatchSize: 2 });
    const whole = track(h.inference(rowsTensor([1, 2, 3, 4, 5, 6])));
    await settle();
    answerNext(new Error('model failed on part 1'));
    await settle();
    await settle();
    expect(whole).toMatchObject({ state: 'rejected', error: { message: 'model failed on part 1' } });
    expect(batchRows()).toEqual([2]); // parts 2 and 3 were cancelled before they started
    expect(h.stats.rejected).toMatchObject({ error: 1, aborted: 2 });
    expect(h.stats.queued).toBe(0);
    await h.stop();
  });

  test("the caller's abort rejects the request with AbortError, whatever part is running", async () => {
    const { h, answerNext } = host({ maxBatchSize: 2 });
    const ac = new AbortController();
    const whole = track(h.inference(rowsTensor([1, 2, 3, 4]), { signal: ac.signal }));
    await settle();
    ac.abort(new Error('client went away'));
    await settle();
    expect(whole.state).toBe('rejected');
    expect(whole.error).toBeInstanceOf(AbortError);
    answerNext(); // the running part finishes; its result is discarded
    await settle();
    expect(whole.state).toBe('rejected');
    await h.stop();
  });

  test('a request that fits is not split, and without splitOversize an oversize one is still refused', async () => {
    const { h, answerNext, batchRows } = host({ maxBatchSize: 4 });
    const fits = track(h.inference(rowsTensor([1, 2, 3, 4])));
    await settle();
    answerNext();
    await settle();
    expect(batchRows()).toEqual([4]);
    expect(valuesOf(fits.value!)).toEqual([2, 4, 6, 8]);
    await h.stop();
    const strict = new ModelHost<TensorLike, TensorLike, TensorLike, TensorLike>(async (b: TensorLike) => b, { maxBatchSize: 2, batcher: new ConcatBatcher() });
    await expect(strict.inference(rowsTensor([1, 2, 3]))).rejects.toThrow(new RangeError('microbatch: a request must have from 1 to maxBatchSize (2) rows; this one has 3 (number). Split it, or raise maxBatchSize.'));
    await strict.stop();
  });

  test('on a real onnxruntime model the joined answer equals one run over all rows', async () => {
    const session = await InferenceSession.create(linearModel(4, 3), { intraOpNumThreads: 1 });
    const sizes: number[] = [];
    const h = new ModelHost<Tensor, Tensor, Tensor, Tensor>(
      async (x) => {
        sizes.push(x.dims[0] as number);
        return (await session.run({ X: x })).Y as Tensor;
      },
      { maxBatchSize: 3, batcher: new ConcatBatcher<Tensor>(), splitOversize: true },
    );
    const input = seeded(7 * 4, 5);
    const y = await h.inference(new Tensor('float32', input, [7, 4]));
    expect(sizes).toEqual([3, 3, 1]);
    expect(y.dims).toEqual([7, 3]);
    const want = Array.from({ length: 7 }, (_, r) => linearReference(input.subarray(r * 4, r * 4 + 4), 4, 3)).flat();
    const got = Array.from(y.data as Float32Array);
    got.forEach((v, i) => expect(v).toBeCloseTo(want[i] as number, 5));
    await h.stop();
    await session.release();
  });

  test('splitOversize with a batcher that cannot cut requests is refused when the host is made', () => {
    expect(() => new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 2, splitOversize: true, batcher: new ListBatcher({ rows: () => 1 }) })).toThrow(
      new TypeError("microbatch: splitOversize needs a batcher that can cut a request into rows and join the parts' results (sliceRows and joinRows, as ConcatBatcher has); an instance of ListBatcher has no sliceRows"),
    );
    expect(() => new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 2, splitOversize: 'yes' as never })).toThrow(
      new TypeError('ModelHost: expected `splitOversize` to be a boolean, got "yes" (string)'),
    );
  });

  test('ConcatBatcher.sliceRows cuts every input of a record the same way, and refuses rows it does not have', () => {
    const b = new ConcatBatcher<Record<string, TensorLike>>();
    const item = { a: rowsTensor([1, 2, 3]), b: { type: 'int32', data: Int32Array.from([4, 5, 6]), dims: [3] } as TensorLike };
    const part = b.sliceRows(item, 1, 2);
    expect(valuesOf(part.a!)).toEqual([2, 3]);
    expect(Array.from(part.b!.data as Int32Array)).toEqual([5, 6]);
    expect(b.joinRows([b.sliceRows(item, 0, 1), part]).a!.dims).toEqual([3, 1]);
    expect(() => b.sliceRows(item, 2, 2)).toThrow(new RangeError('ConcatBatcher.sliceRows: expected rows within 0..3, got 2..4'));
  });
});
