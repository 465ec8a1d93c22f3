import fc from 'fast-check';
import { DictBatcher } from '../../src/batchers/dict-batcher';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import { BatchSizeMismatchError } from '../../src/core/errors';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { ALL_TYPES, at, plain, plainAll, tensor } from './tensors';

type Rec = Record<string, TensorLike>;

/** One Silero-VAD-shaped request: input [1, T], sr a shared int64 scalar, h and c [2, 1, 64]. */
function vadItem(seed: number, samples = 512, sr = 16000n): Rec {
  return {
    input: tensor('float32', [1, samples], seed),
    sr: { type: 'int64', data: BigInt64Array.from([sr]), dims: [] },
    h: tensor('float32', [2, 1, 64], seed + 1000),
    c: tensor('float32', [2, 1, 64], seed + 2000),
  };
}

const vad = (): DictBatcher<Rec, Rec> =>
  new DictBatcher<Rec, Rec>({ inputs: { input: 0, sr: 'shared', h: 1, c: 1 }, outputs: { output: 0, hn: 1, cn: 1 } });

describe('DictBatcher', () => {
  test('Silero VAD feeds: input on axis 0, h and c on axis 1, sr passed once', () => {
    const b = vad();
    const items = [vadItem(1), vadItem(2), vadItem(3)];
    const { batch, ctx } = b.merge(items);
    expect(batch.input!.dims).toEqual([3, 512]);
    expect(batch.h!.dims).toEqual([2, 3, 64]);
    expect(batch.sr).toBe(items[0]!.sr);
    // h[1, 2, 5] of the batch is item 2's h[1, 0, 5]
    expect(at(batch.h!, 1, 2, 5)).toBe(at(items[2]!.h!, 1, 0, 5));
    const output = tensor('float32', [3, 1], 9);
    const [, r1] = b.split({ output, hn: batch.h!, cn: batch.c! }, ctx) as Rec[];
    expect(r1!.output!.dims).toEqual([1, 1]);
    expect(plain(r1!.hn!)).toEqual(plain(items[1]!.h!));
    expect(plain(r1!.cn!)).toEqual(plain(items[1]!.c!));
  });

  test('items whose shared values differ (data, dtype or dims) go to separate groups', () => {
    const items = [
      vadItem(1),
      vadItem(2, 512, 8000n),
      vadItem(3),
      { ...vadItem(4), sr: { type: 'int32', data: new Int32Array([16000]), dims: [] } },
      { ...vadItem(5), sr: { type: 'int64', data: BigInt64Array.from([16000n]), dims: [1] } },
      vadItem(6, 256),
    ];
    expect(vad().partition(items)).toEqual({ groups: [[0, 2], [1], [3], [4], [5]], rejected: [] });
  });

  test('merge refuses items with different shared values, naming the key', () => {
    expect(() => vad().merge([vadItem(1), vadItem(2, 512, 8000n)])).toThrow(
      'DictBatcher: input "sr": expected the same shared value as the first item of the batch (partition groups items by shared values), got a different value in item 1',
    );
    expect(() => vad().merge([vadItem(1), vadItem(2, 256)])).toThrow(
      'DictBatcher: input "input": expected float32 [*, 512] like the first item of the batch (partition groups items by shape), got float32 [*, 256] in item 1',
    );
  });

  test('pre-batched items: rows are counted per item across axes', () => {
    const b = vad();
    const two = { input: tensor('float32', [2, 512], 1), sr: vadItem(1).sr!, h: tensor('float32', [2, 2, 64], 2), c: tensor('float32', [2, 2, 64], 3) };
    expect(b.rows(two)).toBe(2);
    const { ctx } = b.merge([vadItem(4), two]);
    expect(ctx).toEqual({ rows: [1, 2], total: 3 });
  });

  test.each<[string, (r: Rec) => unknown, string]>([
    ['an unknown key', (r) => ({ ...r, state: r.h }), 'DictBatcher: input "state": expected only the keys of `inputs` (input, sr, h, c), got an unknown key "state"'],
    ['a missing key', ({ c: _c, ...r }) => r, 'DictBatcher: input "c": expected a tensor (it is listed in `inputs`), got no such key'],
    ['batched keys disagreeing on rows', (r) => ({ ...r, h: tensor('float32', [2, 2, 64]) }), 'DictBatcher: input "h": expected 1 rows on axis 1, as input "input" has on axis 0, got shape [2, 2, 64] with 2'],
    ['rank too small for the key axis', (r) => ({ ...r, c: tensor('float32', [64]) }), 'DictBatcher: input "c": expected a tensor of rank 2 or more (batch axis 1), got shape [64]'],
    ['a malformed tensor', (r) => ({ ...r, sr: { type: 'int64', data: new Float64Array(1), dims: [] } }), 'DictBatcher: input "sr": expected int64 data in a BigInt64Array, got a Float64Array'],
    ['not a record', (r) => r.input, 'DictBatcher: the request: expected a record of tensors with keys input, sr, h, c, got a single tensor (float32 [1, 512])'],
  ])('%s rejects that item alone, naming the key', (_name, spoil, message) => {
    const b = vad();
    const bad = spoil(vadItem(9)) as Rec;
    expect(() => b.rows(bad)).toThrow(TensorInputError);
    expect(() => b.rows(bad)).toThrow(message);
    const p = b.partition([vadItem(1), bad, vadItem(2)]);
    expect(p.groups).toEqual([[0, 2]]);
    expect(p.rejected).toEqual([{ index: 1, error: expect.objectContaining({ message }) }]);
  });

  test('split checks every batched output against the batch rows, and unlisted outputs', () => {
    const b = vad();
    const { batch, ctx } = b.merge([vadItem(1), vadItem(2)]);
    const bad = (): unknown => b.split({ output: tensor('float32', [2, 1]), hn: tensor('float32', [2, 3, 64]), cn: batch.c! }, ctx);
    expect(bad).toThrow(BatchSizeMismatchError);
    expect(bad).toThrow('DictBatcher: the batch function\'s output "hn" must have one row per input row on axis 1: expected 2 rows (2 requests), got 3 (shape [2, 3, 64])');
    expect(() => b.split({ output: tensor('float32', [2, 1]), extra: tensor('float32', [2]) }, ctx)).toThrow(
      'DictBatcher: the batch function returned output "extra", which is not among `outputs` (output, hn, cn); add it with its batch axis or \'shared\'',
    );
    expect(() => b.split(7 as never, ctx)).toThrow(new TypeError('DictBatcher: the batch function must return a record of tensors (or one tensor) with 2 rows; it returned 7 (number)'));
  });

  test('without `outputs`, outputs take the axis of the same-named input, else 0; shared outputs are copied to each item', () => {
    const b = new DictBatcher<Rec, Rec>({ inputs: { x: 1, k: 'shared' }, outputs: undefined });
    const { batch, ctx } = b.merge([{ x: tensor('int8', [3, 1], 1), k: tensor('uint8', [2], 2) }, { x: tensor('int8', [3, 2], 3), k: tensor('uint8', [2], 2) }]);
    expect(batch.x!.dims).toEqual([3, 3]);
    const out = b.split({ x: batch.x!, y: tensor('float32', [3], 4) }, ctx) as Rec[];
    expect(out.map((r) => [r.x!.dims, r.y!.dims])).toEqual([[[3, 1], [1]], [[3, 2], [2]]]);
    const shared = new DictBatcher<Rec, Rec>({ inputs: { x: 0 }, outputs: { x: 0, s: 'shared' } });
    const m = shared.merge([{ x: tensor('int8', [1]) }, { x: tensor('int8', [1], 2) }]);
    const [s0, s1] = shared.split({ x: m.batch.x!, s: tensor('string', [2], 5) }, m.ctx) as Rec[];
    expect(plain(s0!.s!)).toEqual(plain(s1!.s!));
    expect(s0!.s!.data).not.toBe(s1!.s!.data);
  });

  test('round trip (property): random per-key axes, dtypes and shared keys come back unchanged', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ rank: fc.integer({ min: 1, max: 3 }), axisSeed: fc.nat(), type: fc.constantFrom(...ALL_TYPES), shared: fc.boolean() }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 5 }),
        (keys, rows) => {
          const inputs: Record<string, number | 'shared'> = { k0: 0 };
          const spec = keys.map((k, i) => ({ ...k, name: `k${i}`, axis: k.axisSeed % k.rank, shared: i > 0 && k.shared }));
          for (const s of spec) inputs[s.name] = s.shared ? 'shared' : s.axis;
          const b = new DictBatcher<Rec, Rec>({ inputs });
          const items = rows.map((r, n) =>
            Object.fromEntries(spec.map((s, i) => [s.name, tensor(s.type, Array.from({ length: s.rank }, (_, a) => (!s.shared && a === s.axis ? r : 2)), s.shared ? i : n * 10 + i)])),
          );
          const p = b.partition(items);
          expect(p.groups).toEqual([items.map((_, i) => i)]);
          const { batch, ctx } = b.merge(items);
          expect(b.split(batch, ctx).map(plainAll)).toEqual(items.map(plainAll));
        },
      ),
      { numRuns: 150 },
    );
  });

  test('options are checked', () => {
    expect(() => new DictBatcher({ inputs: { sr: 'shared' } })).toThrow(new TypeError(`DictBatcher: expected at least one batched key in \`inputs\` (an axis, not 'shared'), got {"sr":"shared"}`));
    expect(() => new DictBatcher({ inputs: { x: -1 } })).toThrow(new TypeError(`DictBatcher: expected \`inputs.x\` to be a non-negative integer axis or 'shared', got -1 (number)`));
    expect(() => new DictBatcher({ inputs: {} })).toThrow(new TypeError(`DictBatcher: expected \`inputs\` to be a non-empty record of key → batch axis or 'shared', got an object`));
    expect(() => new DictBatcher(undefined as never)).toThrow(new TypeError('DictBatcher: expected an options object with `inputs`, got undefined'));
  });
});
