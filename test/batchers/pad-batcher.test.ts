import fc from 'fast-check';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import { BatchSizeMismatchError } from '../../src/core/errors';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { ALL_TYPES, at, plain, tensor } from './tensors';

type Rec = Record<string, TensorLike>;
const seq = (values: number[]): TensorLike => ({ type: 'int32', data: new Int32Array(values), dims: [1, values.length] });
const ids = (values: number[]): TensorLike => ({ type: 'int64', data: BigInt64Array.from(values.map(BigInt)), dims: [1, values.length] });

describe('PadBatcher padding, mask and lengths', () => {
  test('pads each item at the end of padAxis to the longest, with the pad value', () => {
    const b = new PadBatcher({ padValue: -1 });
    const { batch, ctx, padding } = b.merge([seq([1, 2, 3]), seq([4]), seq([5, 6])]);
    expect(plain(batch as TensorLike)).toEqual({ type: 'int32', dims: [3, 3], kind: '[object Int32Array]', data: [1, 2, 3, 4, -1, -1, 5, 6, -1] });
    expect(ctx).toEqual({ rows: [1, 1, 1], total: 3, lengths: [3, 1, 2], length: 3 });
    expect(padding).toBeCloseTo(3 / 9);
  });

  test('an attention mask [rows, L] (int64 by default) and lengths [rows] turn the batch into a record', () => {
    const b = new PadBatcher<TensorLike, TensorLike, Rec>({ key: 'input_ids', maskKey: 'attention_mask', lengthsKey: 'lengths' });
    const twoRows: TensorLike = { type: 'int64', data: BigInt64Array.from([7n, 8n]), dims: [2, 1] };
    const { batch } = b.merge([ids([1, 2, 3]), twoRows]);
    expect(Object.keys(batch)).toEqual(['input_ids', 'attention_mask', 'lengths']);
    expect(Array.from(batch.input_ids!.data as BigInt64Array)).toEqual([1n, 2n, 3n, 7n, 0n, 0n, 8n, 0n, 0n]);
    expect(plain(batch.attention_mask!)).toEqual({ type: 'int64', dims: [3, 3], kind: '[object BigInt64Array]', data: [1n, 1n, 1n, 1n, 0n, 0n, 1n, 0n, 0n] });
    expect(plain(batch.lengths!)).toEqual({ type: 'int64', dims: [3], kind: '[object BigInt64Array]', data: [3n, 1n, 1n] });
  });

  test('maskType and lengthsType choose the dtypes', () => {
    const b = new PadBatcher<TensorLike, TensorLike, Rec>({ maskKey: 'm', maskType: 'float32', lengthsKey: 'n', lengthsType: 'int32' });
    const { batch } = b.merge([seq([1, 2]), seq([3])]);
    expect(plain(batch.m!)).toMatchObject({ type: 'float32', data: [1, 1, 1, 0] });
    expect(plain(batch.n!)).toMatchObject({ type: 'int32', data: [2, 1] });
    expect(plain(batch.input!)).toMatchObject({ dims: [2, 2] });
  });

  test('records: keys with a pad axis are padded with their own pad value; others are concatenated', () => {
    const b = new PadBatcher<Rec, Rec, Rec>({ padValue: { ids: 0, types: 9 }, maskKey: 'mask' });
    const item = (v: number[], s: number): Rec => ({ ids: seq(v), types: seq(v.map(() => 1)), scale: { type: 'float32', data: new Float32Array([s]), dims: [1] } });
    const { batch, padding } = b.merge([item([1, 2], 0.5), item([3, 4, 5, 6], 2)]);
    expect(Array.from(batch.ids!.data as Int32Array)).toEqual([1, 2, 0, 0, 3, 4, 5, 6]);
    expect(Array.from(batch.types!.data as Int32Array)).toEqual([1, 1, 9, 9, 1, 1, 1, 1]);
    expect(Array.from(batch.scale!.data as Float32Array)).toEqual([0.5, 2]);
    expect(Array.from(batch.mask!.data as BigInt64Array)).toEqual([1n, 1n, 0n, 0n, 1n, 1n, 1n, 1n]);
    // 4 padded of 8 + 8 + 2 input elements
    expect(padding).toBeCloseTo(4 / 18);
  });

  test('`pad` limits padding to the listed keys; other keys must match to share a batch', () => {
    const b = new PadBatcher<Rec>({ pad: ['x'] });
    const item = (n: number, m: number): Rec => ({ x: seq(new Array<number>(n).fill(1)), y: seq(new Array<number>(m).fill(2)) });
    expect(b.partition([item(1, 2), item(3, 2), item(2, 3)]).groups).toEqual([[0, 1], [2]]);
  });

  test('padAxis other than 1 and a batch axis other than 0: [W, 1] items, time-major', () => {
    const b = new PadBatcher({ axis: 1, padAxis: 0, padValue: 7 });
    const col = (v: number[]): TensorLike => ({ type: 'float64', data: new Float64Array(v), dims: [v.length, 1] });
    const { batch } = b.merge([col([1, 2]), col([3])]);
    expect(plain(batch as TensorLike)).toMatchObject({ dims: [2, 2], data: [1, 3, 2, 7] });
  });

  test('strings pad with "" by default, bool with false, float16 with raw bits', () => {
    const s = new PadBatcher().merge([{ type: 'string', data: ['a', 'b'], dims: [1, 2] }, { type: 'string', data: ['c'], dims: [1, 1] }]);
    expect((s.batch as TensorLike).data).toEqual(['a', 'b', 'c', '']);
    const bl = new PadBatcher({ padValue: true }).merge([{ type: 'bool', data: new Uint8Array([0, 0]), dims: [1, 2] }, { type: 'bool', data: new Uint8Array([0]), dims: [1, 1] }]);
    expect(Array.from((bl.batch as TensorLike).data as Uint8Array)).toEqual([0, 0, 0, 1]);
    const h = new PadBatcher({ padValue: 0x7c00 }).merge([{ type: 'float16', data: new Uint16Array([1, 2]), dims: [1, 2] }, { type: 'float16', data: new Uint16Array([3]), dims: [1, 1] }]);
    expect(Array.from((h.batch as TensorLike).data as Uint16Array)).toEqual([1, 2, 3, 0x7c00]);
  });

  test('a pad value the dtype cannot hold fails the merge with both named', () => {
    expect(() => new PadBatcher({ padValue: 0.5 }).merge([ids([1]), ids([1, 2])])).toThrow(
      new TypeError('PadBatcher (padValue for "input"): expected an integer pad value for a int64 tensor, got 0.5'),
    );
  });
});

describe('PadBatcher un-padding', () => {
  test('unpadAxis trims each item to its own length; outputs without that axis are only sliced', () => {
    const b = new PadBatcher<TensorLike, Rec>({ unpadAxis: 1, unpadOutputs: ['hidden'] });
    const { batch, ctx } = b.merge([seq([1, 2, 3]), seq([4])]);
    const hidden = tensor('float32', [2, 3, 2], 3);
    const pooled = tensor('float32', [2, 3], 4); // axis 1 is features, not time: not listed in unpadOutputs
    const [r0, r1] = b.split({ hidden, pooled }, ctx) as Rec[];
    expect(r0!.hidden!.dims).toEqual([1, 3, 2]);
    expect(r1!.hidden!.dims).toEqual([1, 1, 2]);
    expect(Array.from(r1!.hidden!.data as Float32Array)).toEqual([at(hidden, 1, 0, 0), at(hidden, 1, 0, 1)]);
    expect(r1!.pooled!.dims).toEqual([1, 3]);
    expect(batch).toBeDefined();
  });

  test('a model that shortens the sequence is un-padded in proportion (ceil)', () => {
    const b = new PadBatcher({ unpadAxis: 1 });
    const { ctx } = b.merge([seq(new Array<number>(8).fill(1)), seq([1, 2, 3])]);
    const out = tensor('float32', [2, 4], 1); // stride 2
    const [r0, r1] = b.split(out, ctx) as TensorLike[];
    expect(r0!.dims).toEqual([1, 4]);
    expect(r1!.dims).toEqual([1, 2]); // ceil(3 * 4 / 8)
  });

  test('round trip (property): padding then un-padding through an identity model returns every item, for every dtype', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ALL_TYPES),
        fc.array(fc.record({ rows: fc.integer({ min: 1, max: 2 }), length: fc.integer({ min: 0, max: 5 }) }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 3 }),
        (type, specs, feat) => {
          const items = specs.map((s, i) => tensor(type, [s.rows, s.length, feat], i + 1));
          const b = new PadBatcher({ unpadAxis: 1 });
          const { groups, rejected } = b.partition(items);
          expect(rejected).toEqual([]);
          expect(groups).toEqual([items.map((_, i) => i)]);
          const { batch, ctx, padding } = b.merge(items);
          const longest = Math.max(...specs.map((s) => s.length));
          expect((batch as TensorLike).dims).toEqual([specs.reduce((a, s) => a + s.rows, 0), longest, feat]);
          const real = specs.reduce((a, s) => a + s.rows * s.length * feat, 0);
          const all = (batch as TensorLike).data.length;
          expect(padding).toBeCloseTo(all === 0 ? 0 : (all - real) / all);
          expect(b.split(batch as TensorLike, ctx).map((r) => plain(r as TensorLike))).toEqual(items.map(plain));
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('PadBatcher bad input', () => {
  test.each<[string, unknown, ConstructorParameters<typeof PadBatcher>[0], string]>([
    ['a tuple', [seq([1])], {}, 'PadBatcher: the request: expected a tensor or a record of tensors, got an array of length 1'],
    ['rank too small for padAxis', { type: 'int32', data: new Int32Array(2), dims: [2] }, {}, 'PadBatcher: the input: expected a tensor of rank 2 or more (pad axis 1), got shape [2]'],
    ['a key listed in pad is missing', { a: seq([1]) }, { pad: ['b'] }, 'PadBatcher: input "b": expected a tensor to pad (listed in `pad`), got no such key'],
    ['a key the batcher generates', { ids: seq([1]), mask: seq([1]) }, { maskKey: 'mask' }, 'PadBatcher: input "mask": expected no key "mask" (the batcher adds it), got a tensor under that key'],
    ['no key with a pad axis', { a: { type: 'int32', data: new Int32Array(1), dims: [1] } }, {}, 'PadBatcher: the request: expected at least one input with a pad axis 1, got shapes [1]'],
    ['a malformed tensor', { type: 'int32', data: new Int32Array(3), dims: [1, 2] }, {}, 'PadBatcher: the input: expected 2 elements for dims [1, 2], got data of length 3'],
  ])('%s is rejected alone with its message', (_name, bad, options, message) => {
    const b = new PadBatcher(options);
    expect(() => b.rows(bad as TensorLike)).toThrow(TensorInputError);
    expect(() => b.rows(bad as TensorLike)).toThrow(message);
    const p = b.partition([bad as TensorLike]);
    expect(p.groups).toEqual([]);
    expect(p.rejected![0]!.error.message).toBe(message);
  });

  test('split with the wrong row count throws BatchSizeMismatchError', () => {
    const b = new PadBatcher();
    const { ctx } = b.merge([seq([1]), seq([1, 2])]);
    expect(() => b.split(tensor('float32', [3, 2]), ctx)).toThrow(BatchSizeMismatchError);
    expect(() => b.split(tensor('float32', [3, 2]), ctx)).toThrow('PadBatcher: the batch function\'s output must have one row per input row on axis 0: expected 2 rows (2 requests), got 3 (shape [3, 2])');
  });

  test('options are checked', () => {
    expect(() => new PadBatcher({ padAxis: 0 })).toThrow(new RangeError('PadBatcher: expected `padAxis` to differ from the batch axis 0, got 0'));
    expect(() => new PadBatcher({ unpadAxis: 0 })).toThrow(new RangeError('PadBatcher: expected `unpadAxis` to differ from the output batch axis 0, got 0'));
    expect(() => new PadBatcher({ maskKey: 'm', lengthsKey: 'm' })).toThrow(new TypeError('PadBatcher: expected `maskKey` and `lengthsKey` to differ, got "m" for both'));
    expect(() => new PadBatcher({ maskType: 'string' })).toThrow(new TypeError('PadBatcher: expected `maskType` to be a numeric tensor type, got "string" (string)'));
    expect(() => new PadBatcher({ padValue: [0] as never })).toThrow(
      new TypeError('PadBatcher: expected `padValue` to be a number, bigint, boolean, string or a record of them per key, got an array of length 1'),
    );
  });
});
