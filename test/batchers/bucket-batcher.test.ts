import fc from 'fast-check';
import { BucketBatcher } from '../../src/batchers/bucket-batcher';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { ALL_TYPES, plain, plainAll, tensor } from './tensors';

type Rec = Record<string, TensorLike>;

describe('BucketBatcher', () => {
  const len = (n: number, seed = n): TensorLike => tensor('float32', [1, n, 2], seed);

  test('groups by bucket (ascending), pads within each bucket, and reports less waste than one padded batch', () => {
    const b = new BucketBatcher({ buckets: [4, 8, 16] });
    const items = [len(3), len(12), len(4), len(7), len(1), len(16)];
    const { groups, rejected } = b.partition(items);
    expect(rejected).toEqual([]);
    expect(groups).toEqual([[0, 2, 4], [3], [1, 5]]);
    const waste = groups.map((g) => b.merge(g.map((i) => items[i]!)).padding!);
    expect(waste[0]).toBeCloseTo((3 * 4 - 8) / 12);
    expect(waste[1]).toBe(0);
    expect(waste[2]).toBeCloseTo((32 - 28) / 32);
    const single = new PadBatcher().merge(items).padding!;
    expect(single).toBeCloseTo((6 * 16 - 43) / 96);
    const rowWeighted = groups.reduce((s, g, k) => s + waste[k]! * g.length, 0) / items.length;
    expect(rowWeighted).toBeLessThan(single);
  });

  test('items longer than the last bound share an overflow bucket by default, or are rejected with overflow: reject', () => {
    const items = [len(2), len(30), len(50)];
    expect(new BucketBatcher({ buckets: [4, 8] }).partition(items).groups).toEqual([[0], [1, 2]]);
    const p = new BucketBatcher({ buckets: [4, 8], overflow: 'reject' }).partition(items);
    expect(p.groups).toEqual([[0]]);
    expect(p.rejected!.map((r) => r.index)).toEqual([1, 2]);
    expect(p.rejected![0]!.error).toBeInstanceOf(TensorInputError);
    expect(p.rejected![0]!.error.message).toBe('BucketBatcher: the request: expected a length of at most 8 (the last bucket), got length 30');
  });

  test("padTo: 'bucket' pads to the bucket's bound; the mask and un-padding follow", () => {
    const b = new BucketBatcher<TensorLike, TensorLike, Rec>({ buckets: [4, 8], padTo: 'bucket', maskKey: 'mask', unpadAxis: 1 });
    const items = [len(5, 1), len(6, 2)];
    const { batch, ctx, padding } = b.merge(items);
    expect(batch.input!.dims).toEqual([2, 8, 2]);
    expect(Array.from(batch.mask!.data as BigInt64Array).map(Number)).toEqual([1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0]);
    expect(padding).toBeCloseTo(10 / 32);
    expect(b.split(batch.input!, ctx).map((r) => plain(r as TensorLike))).toEqual(items.map(plain));
  });

  test('lengthOf chooses the bucket; a throwing or invalid lengthOf rejects that item only', () => {
    const b = new BucketBatcher<TensorLike>({
      buckets: [10, 100],
      lengthOf: (t) => {
        if (t.dims[1] === 3) throw new Error('no length for 3');
        return t.dims[1] === 4 ? Number.NaN : (t.dims[1] as number) * 10;
      },
    });
    const p = b.partition([len(1), len(2), len(3), len(4)]);
    expect(p.groups).toEqual([[0], [1]]);
    expect(p.rejected!.map((r) => r.error)).toEqual([new Error('no length for 3'), new TypeError('BucketBatcher: expected `lengthOf` to return a non-negative number, got NaN (number)')]);
  });

  test('items of other shapes are in other groups even within a bucket; malformed ones are rejected', () => {
    const b = new BucketBatcher({ buckets: [8] });
    const p = b.partition([len(2), tensor('float32', [1, 2, 3]), len(3), { type: 'float32', data: new Float32Array(1), dims: [1] }]);
    expect(p.groups).toEqual([[0, 2], [1]]);
    expect(p.rejected!.map((r) => r.error.message)).toEqual(['BucketBatcher: the input: expected a tensor of rank 2 or more (pad axis 1), got shape [1]']);
  });

  test('bucketOf and options', () => {
    const b = new BucketBatcher({ buckets: [2, 4] });
    expect([0, 2, 3, 4, 5].map((n) => b.bucketOf(n))).toEqual([0, 0, 1, 1, 2]);
    expect(() => new BucketBatcher({ buckets: [4, 2] })).toThrow(new TypeError('BucketBatcher: expected `buckets` to be a non-empty array of ascending positive integers, got [4,2]'));
    expect(() => new BucketBatcher({ buckets: [4], overflow: 'drop' as never })).toThrow(new TypeError(`BucketBatcher: expected \`overflow\` to be 'group' or 'reject', got "drop" (string)`));
    expect(() => new BucketBatcher({ buckets: [4], padAxis: 0 })).toThrow(new RangeError('BucketBatcher: expected `padAxis` to differ from the batch axis 0, got 0'));
  });

  test('records round-trip through buckets, for every dtype (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 8 }), fc.constantFrom(...ALL_TYPES), fc.constantFrom(...ALL_TYPES), (lengths, ta, tb) => {
        const b = new BucketBatcher<Rec, Rec>({ buckets: [3, 6, 9], unpadAxis: 1 });
        const items = lengths.map((n, i) => ({ a: tensor(ta, [1, n], i), b: tensor(tb, [1, n, 2], i + 50) }));
        const results = new Array<unknown>(items.length);
        for (const g of b.partition(items).groups) {
          const { batch, ctx } = b.merge(g.map((i) => items[i]!));
          b.split(batch as Rec, ctx).forEach((r, k) => (results[g[k]!] = r));
        }
        expect(results.map(plainAll)).toEqual(items.map(plainAll));
      }),
      { numRuns: 100 },
    );
  });
});
