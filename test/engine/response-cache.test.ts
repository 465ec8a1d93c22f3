import { Tensor } from 'onnxruntime-node';
import { AbortError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import type { HostOptions } from '../../src/core/options';
import { ModelHost } from '../../src/engine/model-host';
import { createOnnxHost } from '../../src/onnx';
import { ControlledModel, settle, track } from '../support/controlled-model';
import { linearModel } from '../support/onnx-models';

function setup<T>(cache: HostOptions<T, string>['cache']) {
  const clock = new ManualClock();
  const model = new ControlledModel<T, string>();
  const host = new ModelHost<T, string>(model.fn, { maxBatchSize: 8, clock, cache });
  return { clock, model, host };
}

describe('cache: identical requests share one computation, finished results are kept', () => {
  test('identical requests waiting or running share one computation', async () => {
    const { model, host } = setup<string>(true);
    const a = [track(host.inference('a')), track(host.inference('a')), track(host.inference('a'))];
    const b = track(host.inference('b'));
    await settle();
    expect(model.calls.map((c) => c.items)).toEqual([['a', 'b']]);
    model.answer(0, (x) => x.toUpperCase());
    await settle();
    expect([...a.map((r) => r.value), b.value]).toEqual(['A', 'A', 'A', 'B']);
    expect(host.stats.cache).toEqual({ hits: 0, shared: 2, misses: 2, size: 2 });
    // Finished: answered at once, without a model call.
    await expect(host.inference('a')).resolves.toBe('A');
    expect(model.calls).toHaveLength(1);
    expect(host.stats.cache).toMatchObject({ hits: 1 });
    await host.stop();
  });

  test('ttlMs expires a result; maxEntries drops the least recently used', async () => {
    const { clock, model, host } = setup<string>({ maxEntries: 2, ttlMs: 100 });
    const answerAll = async () => {
      await settle();
      model.answer(model.calls.length - 1, (x) => `${x}!`);
      await settle();
    };
    void host.inference('a');
    await answerAll();
    void host.inference('b');
    await answerAll();
    await host.inference('a'); // a is now the most recently used
    void host.inference('c'); // evicts b
    await answerAll();
    expect(model.calls.map((c) => c.items[0])).toEqual(['a', 'b', 'c']);
    await expect(host.inference('a')).resolves.toBe('a!');
    void host.inference('b');
    await answerAll();
    expect(model.calls.map((c) => c.items[0])).toEqual(['a', 'b', 'c', 'b']);
    clock.advance(100);
    void host.inference('b');
    await answerAll();
    expect(model.calls.map((c) => c.items[0])).toEqual(['a', 'b', 'c', 'b', 'b']); // expired, computed again
    await host.stop();
  });

  test('errors are shared by the requests waiting for them, and never kept', async () => {
    const { model, host } = setup<string>(true);
    const x1 = track(host.inference('x'));
    const x2 = track(host.inference('x'));
    await settle();
    model.answer(0, () => new Error('bad input x'));
    await settle();
    expect([x1.error?.message, x2.error?.message]).toEqual(['bad input x', 'bad input x']);
    const again = track(host.inference('x'));
    await settle();
    expect(model.calls).toHaveLength(2);
    model.answer(1, () => 'fine now');
    await settle();
    expect(again.value).toBe('fine now');
    await host.stop();
  });

  test("each caller waits under its own signal; when every caller has left, the computation is aborted", async () => {
    const { model, host } = setup<string>(true);
    const busy = host.inference('busy');
    await settle();
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const one = track(host.inference('k', { signal: ac1.signal }));
    const two = track(host.inference('k', { signal: ac2.signal }));
    const three = track(host.inference('k'));
    ac1.abort(new Error('first caller left'));
    await settle();
    expect(one.error).toBeInstanceOf(AbortError);
    model.answer(0, (x) => x);
    await settle();
    model.answer(1, (x) => `${x}:done`);
    await settle();
    expect([two.value, three.value]).toEqual(['k:done', 'k:done']);
    await busy;
    // All callers of a queued computation leave: it leaves the queue and never runs.
    const blocker = host.inference('blocker');
    await settle();
    const ac = new AbortController();
    const lone = track(host.inference('gone', { signal: ac.signal }));
    ac.abort();
    await settle();
    expect(lone.error).toBeInstanceOf(AbortError);
    model.answer(2, (x) => x);
    await blocker;
    await settle();
    expect(model.calls.map((c) => c.items)).toEqual([['busy'], ['k'], ['blocker']]);
    await host.stop();
  });

  test('default keys: typed arrays and tensors by content; a key function; a value with no default key is refused', async () => {
    const { model, host } = setup<unknown>(true);
    const p1 = host.inference(Float32Array.from([1, 2, 3]));
    const p2 = host.inference(Float32Array.from([1, 2, 3])); // another array, same content
    const p3 = host.inference(Float32Array.from([1, 2, 4]));
    const t1 = host.inference({ type: 'float32', data: Float32Array.from([1, 2]), dims: [1, 2] });
    const t2 = host.inference({ type: 'float32', data: Float32Array.from([1, 2]), dims: [2, 1] }); // same bytes, other shape
    await settle();
    expect(model.calls[0]!.items).toHaveLength(4);
    model.answer(0, () => 'ok');
    await expect(Promise.all([p1, p2, p3, t1, t2])).resolves.toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    class Custom {
      readonly id = 1;
    }
    await expect(host.inference(new Custom())).rejects.toThrow(
      new TypeError(
        'microbatch: the response cache has no default key for an instance of Custom; give the cache a key(item) function ' +
          '(the default keys strings, numbers, booleans, typed arrays, ArrayBuffers, tensors, and arrays or plain objects of them)',
      ),
    );
    await host.stop();
    const keyed = setup<{ id: number; at: number }>({ key: (r) => r.id });
    const k1 = keyed.host.inference({ id: 7, at: 1 });
    const k2 = keyed.host.inference({ id: 7, at: 2 });
    await settle();
    expect(keyed.model.calls[0]!.items).toHaveLength(1);
    keyed.model.answer(0, () => 'seven');
    await expect(Promise.all([k1, k2])).resolves.toEqual(['seven', 'seven']);
    await keyed.host.stop();
  });

  test('on a real onnxruntime model: a repeated input (onnxruntime feeds) is answered from the cache', async () => {
    const host = await createOnnxHost(linearModel(), { maxBatchSize: 4, session: { intraOpNumThreads: 1 }, cache: true });
    const feeds = () => ({ X: new Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]) });
    const first = await host.inference(feeds());
    const second = await host.inference(feeds());
    expect(Array.from(second.Y!.data as Float32Array)).toEqual(Array.from(first.Y!.data as Float32Array));
    expect(host.stats).toMatchObject({ batches: 1, cache: { hits: 1, misses: 1 } });
    await host.stop();
  });

  test('bad cache options are refused with what was expected and what came', () => {
    const make = (cache: unknown) => () => new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 4, cache: cache as never });
    expect(make('yes')).toThrow(new TypeError('ModelHost: expected `cache` to be true, or an object { maxEntries?, ttlMs?, key? }, got "yes" (string)'));
    expect(make({ size: 3 })).toThrow(new TypeError('ModelHost: cache: unknown option `size`; the known options are `maxEntries`, `ttlMs`, `key`'));
    expect(make({ maxEntries: -1 })).toThrow(new RangeError('ModelHost: expected `cache.maxEntries` to be an integer >= 0 (or Infinity), got -1 (number)'));
    expect(make({ key: 'id' })).toThrow(new TypeError('ModelHost: expected `cache.key` to be a function (item) => key, got "id" (string)'));
  });
});

describe('cache: after a reload resolves, every new request is the new model’s', () => {
  test('a stored answer of the old model is not given after the reload', async () => {
    const { model, host } = setup<string>(true);
    const first = track(host.inference('a'));
    await settle();
    model.answer(0, (x) => `old ${x}`);
    await settle();
    expect(first.value).toBe('old a');
    await expect(host.inference('a')).resolves.toBe('old a'); // stored, before the reload
    await host.reload(async (xs: readonly string[]) => xs.map((x) => `new ${x}`));
    await expect(host.inference('a')).resolves.toBe('new a');
    expect(host.stats.cache).toMatchObject({ hits: 1, misses: 2 });
    await host.stop();
  });

  test('a request sent after the reload does not join an old-model computation still in flight, and the old answer is not stored', async () => {
    const { model, host } = setup<string>(true);
    const before = track(host.inference('a'));
    await settle();
    expect(model.calls).toHaveLength(1); // the old model is computing 'a'
    const next = new ControlledModel<string, string>();
    await host.reload(next.fn);
    const after = track(host.inference('a'));
    await settle();
    model.answer(0, (x) => `old ${x}`); // the old model's batch ends (one batch at a time)
    await settle();
    expect(before.value).toBe('old a'); // the caller before the reload gets the old model's answer
    expect(after.state).toBe('pending');
    expect(next.calls.map((c) => c.items)).toEqual([['a']]); // computed again, by the new model
    next.answer(0, (x) => `new ${x}`);
    await settle();
    expect(after.value).toBe('new a');
    await expect(host.inference('a')).resolves.toBe('new a'); // the new model's answer is the one stored
    expect(host.stats.cache).toMatchObject({ hits: 1, shared: 0, misses: 2 });
    await host.stop();
  });
});
