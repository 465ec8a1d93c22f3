/**
 * Type-level tests: checked by `tsc` (run before jest in `npm test`). The runtime assertions only
 * make jest count the file.
 */
import { expectTypeOf } from 'expect-type';
import { ModelHost, Proxy, type Batcher, type HostStats } from '../../src';

interface Tensor {
  readonly type: string;
  readonly data: Float32Array;
  readonly dims: readonly number[];
}
const tensorBatcher: Batcher<Tensor, Tensor, Tensor, Tensor, number> = {
  merge: (items) => ({ batch: items[0] as Tensor, ctx: items.length }),
  split: (out, n) => Array.from({ length: n }, () => out),
};

test('inference() returns the right type in every style', () => {
  class Scorer extends Proxy<string, number> {
    constructor() {
      super({ maxBatchSize: 8 });
    }
    protected async _inference(texts: readonly string[]): Promise<number[]> {
      return texts.map((t) => t.length);
    }
  }
  const proxy = new Scorer();
  expectTypeOf(proxy.inference('x')).toEqualTypeOf<Promise<number>>();
  expectTypeOf(new (class extends Proxy<string, number> {
    protected async _inference(xs: readonly string[]) {
      return xs.map(() => 1);
    }
  })(4).inference('x')).toEqualTypeOf<Promise<number>>();
  // @ts-expect-error the input type is enforced
  void proxy.inference(42).catch(() => undefined);

  const list = new ModelHost(async (xs: readonly number[]) => xs.map(String), { maxBatchSize: 4 });
  expectTypeOf(list.inference(1)).toEqualTypeOf<Promise<string>>();
  expectTypeOf(list).toMatchTypeOf<ModelHost<number, string>>();
  // @ts-expect-error a string is not a number
  void list.inference('1').catch(() => undefined);

  const withErrors = new ModelHost(async (xs: readonly number[]) => xs.map((x) => (x > 0 ? x : new Error('neg'))), 4);
  expectTypeOf(withErrors.inference(1)).toEqualTypeOf<Promise<number>>();

  const tensors = new ModelHost(async (batch) => batch, { maxBatchSize: 4, batcher: tensorBatcher });
  expectTypeOf(tensors.inference).parameter(0).toEqualTypeOf<Tensor>();
  expectTypeOf(tensors.inference({} as Tensor)).toEqualTypeOf<Promise<Tensor>>();

  expectTypeOf(list.stats).toEqualTypeOf<HostStats>();
  expect(typeof proxy.inference).toBe('function');
  void Promise.all([proxy.close(), list.stop(), withErrors.stop(), tensors.stop()]);
});

test('a batch function that returns the wrong shape is a compile error', () => {
  // @ts-expect-error results must be an array
  const bad = new ModelHost(async (xs: readonly number[]) => xs.length, 4);
  expect(bad).toBeInstanceOf(ModelHost);
  void bad.stop();
});

test('the lifecycle options are typed by the host input: warm-up samples and the cache key take In', () => {
  const host = new ModelHost(async (xs: readonly number[]) => xs.map(String), {
    maxBatchSize: 4,
    warmup: { samples: [1, 2] },
    cache: { key: (x) => {
      expectTypeOf(x).toEqualTypeOf<number>();
      return x % 10;
    } },
    priorities: { 1: { maxDelayMs: 0 } },
    preferredBatchSizes: [2, 4],
  });
  expectTypeOf(host.inference(1)).toEqualTypeOf<Promise<string>>();
  expectTypeOf(host.stats.cache).toEqualTypeOf<{ readonly hits: number; readonly shared: number; readonly misses: number; readonly size: number } | undefined>();
  // @ts-expect-error warm-up samples are requests of the host's input type
  const wrong = new ModelHost(async (xs: readonly number[]) => xs.map(String), { maxBatchSize: 4, warmup: { samples: ['one'] } });
  expect(host).toBeInstanceOf(ModelHost);
  void Promise.all([host.stop(), wrong.stop()]);
});
