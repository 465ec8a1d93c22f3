import fc from 'fast-check';
import { ModelHost } from '../../src/engine/model-host';
import { ListBatcher } from '../../src/batchers/list-batcher';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { ALL_TYPES, plain, tensor } from './tensors';

describe('ListBatcher', () => {
  test('round trip (property): merge then split through an identity model returns every item unchanged, in order', () => {
    // Tensors of every dtype next to arbitrary values: the list batcher must not look inside them.
    const tensorArb = fc
      .record({ type: fc.constantFrom(...ALL_TYPES), dims: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }), seed: fc.nat() })
      .map(({ type, dims, seed }) => tensor(type, dims, seed));
    fc.assert(
      fc.property(fc.array(fc.oneof(tensorArb, fc.anything()), { minLength: 1, maxLength: 8 }), (items) => {
        const b = new ListBatcher<unknown, unknown>();
        const { batch, ctx } = b.merge(items);
        expect(ctx).toBe(items.length);
        const out = b.split(batch, ctx);
        expect(out).toHaveLength(items.length);
        out.forEach((r, i) => expect(r).toBe(items[i]));
      }),
      { numRuns: 150 },
    );
  });

  test('through a host: concurrent items reach the model as one array and come back per caller, Errors rejecting only theirs', async () => {
    const seen: number[] = [];
    const host = new ModelHost(
      async (xs: readonly TensorLike[]) => {
        seen.push(xs.length);
        return xs.map((x) => (x.type === 'string' ? new RangeError(`no strings: ${x.dims.join('x')}`) : x));
      },
      { maxBatchSize: 8, batcher: new ListBatcher<TensorLike, TensorLike>() },
    );
    const items = [tensor('int64', [1, 2], 1), tensor('string', [2, 1], 2), tensor('float16', [3], 3)];
    const results = await Promise.allSettled(items.map((t) => host.inference(t)));
    await host.stop();
    expect(seen).toEqual([3]);
    expect(plain((results[0] as PromiseFulfilledResult<TensorLike>).value)).toEqual(plain(items[0]!));
    expect((results[1] as PromiseRejectedResult).reason).toEqual(new RangeError('no strings: 2x1'));
    expect(plain((results[2] as PromiseFulfilledResult<TensorLike>).value)).toEqual(plain(items[2]!));
  });

  test('rows counts pre-batched items against maxBatchSize', () => {
    const b = new ListBatcher<number[], number>({ rows: (x) => x.length });
    expect(b.rows?.([1, 2, 3])).toBe(3);
    expect(new ListBatcher().rows).toBeUndefined();
  });

  test('split refuses a batch output that is not an array, saying what came', () => {
    expect(() => new ListBatcher().split(7 as never, 2)).toThrow(
      new TypeError('The batch function must return (a promise of) an array with one result or Error per item, in item order; for 2 items it returned 7 (number)'),
    );
  });
});
