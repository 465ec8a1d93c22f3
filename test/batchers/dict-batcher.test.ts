import fc from 'fast-check';
import { Tensor } from 'onnxruntime-node';
import { ModelHost } from '../../src/engine/model-host';
import { BucketBatcher } from '../../src/batchers/bucket-batcher';
import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import { DictBatcher, type KeyAxis } from '../../src/batchers/dict-batcher';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import type { Batcher } from '../../src/core/batcher';
import { BatchSizeMismatchError } from '../../src/core/errors';
import type { BatchEvent } from '../../src/core/observer';
import { createOnnxHost, type OnnxFeeds, type OnnxResults } from '../../src/onnx';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { onnx } from 'onnx-proto';
import { encodeModel, int64Init, valueInfo } from '../support/onnx-models';
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
    expect(() => new DictBatcher({ inputs: { sr: 'shared' } })).toThrow(new TypeError(`DictBatcher: expected at least one batched key in \`inputs\` (an axis or a batcher, not 'shared'), got {"sr":"shared"}`));
    expect(() => new DictBatcher({ inputs: { x: -1 } })).toThrow(
      new TypeError("DictBatcher: expected `inputs.x` to be a non-negative integer axis, 'shared' or a batcher (an object with `merge` and `split` methods), got -1 (number)"),
    );
    expect(() => new DictBatcher({ inputs: {} })).toThrow(new TypeError(`DictBatcher: expected \`inputs\` to be a non-empty record of key → batch axis, 'shared' or batcher, got an object`));
    expect(() => new DictBatcher({ inputs: { x: 0 }, outputs: { y: 1.5 } })).toThrow(new TypeError("DictBatcher: expected `outputs.y` to be a non-negative integer axis or 'shared', got 1.5 (number)"));
    expect(() => new DictBatcher(undefined as never)).toThrow(new TypeError('DictBatcher: expected an options object with `inputs`, got undefined'));
  });
});

const i64 = (values: readonly number[], dims: readonly number[] = [1, values.length]): TensorLike => ({ type: 'int64', data: BigInt64Array.from(values.map(BigInt)), dims: [...dims] });
const f32 = (values: readonly number[], dims: readonly number[]): TensorLike => ({ type: 'float32', data: Float32Array.from(values), dims: [...dims] });
const values = (t: TensorLike | undefined): unknown[] => Array.from(t!.data as ArrayLike<unknown>);

/** A text-model request: token ids and their mask [1, T], a feature row x [1, 2], a shared temperature. */
function textItem(ids: readonly number[], x: number, temperature = 0.5): Rec {
  return { input_ids: i64(ids), attention_mask: i64(ids.map(() => 1)), x: f32([x, -x], [1, 2]), temperature: f32([temperature], []) };
}

const text = (): DictBatcher<Rec, Rec> =>
  new DictBatcher<Rec, Rec>({
    inputs: { input_ids: new PadBatcher({ padAxis: 1, padValue: 0 }), attention_mask: new PadBatcher({ padAxis: 1, padValue: 0 }), x: 0, temperature: 'shared' },
  });

describe('DictBatcher with a batcher per key', () => {
  test('round trip through an identity model: lengths differ, one model call, padded keys padded, others concatenated', async () => {
    const seen: Rec[] = [];
    const events: BatchEvent[] = [];
    const host = new ModelHost(
      async (batch: Rec) => {
        seen.push(batch);
        return batch;
      },
      { maxBatchSize: 8, batcher: text(), observer: { onBatch: (e) => events.push(e) } },
    );
    const ids = [[5, 6, 7, 8], [9, 10], [11, 12, 13], [14, 15, 16]];
    const out = await Promise.all(ids.map((v, i) => host.inference(textItem(v, i + 1))));
    await host.stop();

    expect(seen).toHaveLength(1);
    const batch = seen[0]!;
    expect(batch.input_ids!.dims).toEqual([4, 4]);
    expect(values(batch.input_ids)).toEqual([5n, 6n, 7n, 8n, 9n, 10n, 0n, 0n, 11n, 12n, 13n, 0n, 14n, 15n, 16n, 0n]);
    expect(values(batch.attention_mask)).toEqual([1n, 1n, 1n, 1n, 1n, 1n, 0n, 0n, 1n, 1n, 1n, 0n, 1n, 1n, 1n, 0n]);
    expect(batch.x!.dims).toEqual([4, 2]);
    expect(values(batch.x)).toEqual([1, -1, 2, -2, 3, -3, 4, -4]);
    expect(batch.temperature!.dims).toEqual([]);

    // Outputs are cut along axis 0 only: a padded axis comes back at the batch's length.
    expect(out[1]!.input_ids!.dims).toEqual([1, 4]);
    expect(values(out[1]!.input_ids)).toEqual([9n, 10n, 0n, 0n]);
    expect(values(out[1]!.attention_mask)).toEqual([1n, 1n, 0n, 0n]);
    expect(out.map((r) => values(r.x))).toEqual([[1, -1], [2, -2], [3, -3], [4, -4]]);
    expect(out.map((r) => plain(r.temperature!))).toEqual(ids.map(() => plain(f32([0.5], []))));

    // 4 of the 16 elements of each padded key are padding; x (8) and temperature (1) have none.
    expect(events.map((e) => [e.requests, e.modelCalls])).toEqual([[4, 1]]);
    expect(events[0]!.paddingWaste).toBe((4 + 4) / (16 + 16 + 8 + 1));
  });

  test('grouping: a padded key adds only dtype and rank, and its batcher\'s partition refines the groups', () => {
    const b = new DictBatcher<Rec, Rec>({ inputs: { ids: new PadBatcher({ padAxis: 1 }), x: 0, k: 'shared' } });
    const item = (ids: TensorLike, x = f32([1, 2], [1, 2]), k = 1): Rec => ({ ids, x, k: f32([k], [1]) });
    const items = [
      item(i64([1, 2, 3])),
      item(i64([1, 2, 3, 4, 5, 6, 7])), // another length: same group
      item({ type: 'int32', data: new Int32Array(3), dims: [1, 3] }), // another dtype
      item(tensor('int64', [1, 3, 2])), // another rank
      item(tensor('int64', [1, 5, 2])), // same rank and trailing dim as 3: padded together
      item(tensor('int64', [1, 5, 4])), // PadBatcher's own partition: another trailing dim
      item(i64([1, 2]), f32([1, 2, 3], [1, 3])), // the axis key x differs in a non-batch dim
      item(i64([1, 2]), undefined, 2), // another shared value
      item(i64([9])),
    ];
    expect(b.partition(items)).toEqual({ groups: [[0, 1, 8], [2], [3, 4], [5], [6], [7]], rejected: [] });

    const buckets = new DictBatcher<Rec, Rec>({ inputs: { ids: new BucketBatcher({ buckets: [4, 8], padAxis: 1, overflow: 'reject' }), x: 0 } });
    const p = buckets.partition([2, 7, 4, 5, 9, 1].map((n) => ({ ids: i64(new Array<number>(n).fill(1)), x: f32([0, 0], [1, 2]) })));
    expect(p.groups).toEqual([[0, 2, 5], [1, 3]]);
    expect(p.rejected).toEqual([{ index: 4, error: expect.any(TensorInputError) }]);
    expect(p.rejected![0]!.error.message).toBe('DictBatcher: input "ids": expected a length of at most 8 (the last bucket), got length 9');
    const m = buckets.merge([{ ids: i64([1, 1]), x: f32([0, 0], [1, 2]) }]);
    expect(m.batch.ids!.dims).toEqual([1, 2]);
  });

  test('padding: the per-key paddings weighted by element count, over every key of the batch', () => {
    // A user batcher with no `rows` (1 row per request) that claims half of its batch is padding.
    const halfPadded: Batcher<TensorLike, TensorLike, TensorLike, TensorLike, number> = {
      merge: (items) => ({ batch: tensor('float32', [items.length, 4]), ctx: items.length, padding: 0.5 }),
      split: () => [],
    };
    const b = new DictBatcher<Rec, Rec>({ inputs: { a: halfPadded, ids: new PadBatcher({ padAxis: 1 }), dense: 0 } });
    const item = (n: number): Rec => ({ a: tensor('float32', [2]), ids: i64(new Array<number>(n).fill(3)), dense: tensor('float32', [1, 6]) });
    const m = b.merge([item(1), item(3)]);
    expect(m.batch.a!.dims).toEqual([2, 4]);
    expect(m.ctx).toEqual({ rows: [1, 1], total: 2 });
    // a: 4 of 8 padded; ids: 2 of 6 padded; dense: 12 elements, none padded.
    expect(m.padding).toBe((4 + 2) / (8 + 6 + 12));
    // Without padded keys the report is 0.
    expect(vad().merge([vadItem(1), vadItem(2)]).padding).toBe(0);
  });

  test('a request its key\'s batcher refuses is rejected alone with a TensorInputError naming the key', async () => {
    const calls: number[] = [];
    const host = new ModelHost(
      async (batch: Rec) => {
        calls.push(batch.x!.dims[0]!);
        return { x: batch.x! };
      },
      { maxBatchSize: 8, batcher: text() },
    );
    const bad = { ...textItem([1, 2], 2), input_ids: i64([1, 2], [2]) };
    const results = await Promise.allSettled([host.inference(textItem([1, 2, 3], 1)), host.inference(bad), host.inference(textItem([4], 3))]);
    await host.stop();
    expect(calls).toEqual([2]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (results[1] as PromiseRejectedResult).reason as TensorInputError;
    expect(error).toBeInstanceOf(TensorInputError);
    expect(error.message).toBe('DictBatcher: input "input_ids": expected a tensor of rank 2 or more (pad axis 1), got shape [2]');
    expect([error.input, error.expected, error.actual]).toEqual(['input "input_ids"', 'a tensor of rank 2 or more (pad axis 1)', 'shape [2]']);
    expect(error.cause).toBeInstanceOf(TensorInputError);
  });

  test.each<[string, Rec, string]>([
    [
      'rows that disagree with an axis key',
      { ...textItem([1, 2], 1), x: f32([1, 2, 3, 4], [2, 2]) },
      'DictBatcher: input "x": expected 1 rows on axis 0, as input "input_ids" has (counted by its PadBatcher), got shape [2, 2] with 2',
    ],
    [
      'rows that disagree between padded keys',
      { ...textItem([1, 2], 1), input_ids: i64([1, 2, 3, 4], [2, 2]) },
      'DictBatcher: input "attention_mask": expected 2 rows (counted by its PadBatcher), as input "input_ids" has (counted by its PadBatcher), got shape [1, 2] with 1',
    ],
    ['a malformed tensor under a padded key', { ...textItem([1], 1), attention_mask: { type: 'int64', data: new Int32Array(1), dims: [1, 1] } }, 'DictBatcher: input "attention_mask": expected int64 data in a BigInt64Array, got an Int32Array'],
  ])('%s: rejected by rows(), naming the key', (_name, item, message) => {
    const b = text();
    expect(() => b.rows(item)).toThrow(TensorInputError);
    expect(() => b.rows(item)).toThrow(message);
    expect(b.partition([textItem([1], 1), item]).rejected).toEqual([{ index: 1, error: expect.objectContaining({ message }) }]);
  });

  test('a user batcher\'s own refusal is relayed with the key; a shape check on a ConcatBatcher key rejects a wrong shape', () => {
    const capped: Batcher<TensorLike, TensorLike, TensorLike, TensorLike, unknown> = {
      rows: (t) => {
        if ((t.dims[1] as number) > 3) throw new RangeError(`${t.dims[1]} tokens, over the cap of 3`);
        return t.dims[0] as number;
      },
      merge: (items) => new ConcatBatcher({ axis: 0 }).merge(items),
      split: () => [],
    };
    const b = new DictBatcher<Rec, Rec>({ inputs: { ids: capped, image: new ConcatBatcher({ shape: [-1, 3, 2, 2] }) } });
    const ok: Rec = { ids: i64([1, 2]), image: tensor('float32', [1, 3, 2, 2]) };
    expect(b.rows(ok)).toBe(1);
    const long = () => b.rows({ ...ok, ids: i64([1, 2, 3, 4]) });
    expect(long).toThrow(TensorInputError);
    expect(long).toThrow('DictBatcher: input "ids": expected a tensor its batcher accepts, got 4 tokens, over the cap of 3');
    expect(() => b.rows({ ...ok, image: tensor('float32', [1, 3, 2, 3]) })).toThrow('DictBatcher: input "image": expected shape [*, 3, 2, 2], got shape [1, 3, 2, 3]');
  });

  test('a key batcher whose merge returns a record (a PadBatcher with maskKey) fails the group with a clear message', () => {
    const b = new DictBatcher<Rec, Rec>({ inputs: { ids: new PadBatcher({ padAxis: 1, maskKey: 'mask' }) } });
    expect(() => b.merge([{ ids: i64([1]) }, { ids: i64([1, 2]) }])).toThrow(
      new TypeError('DictBatcher: the PadBatcher of input "ids" must merge into one tensor: expected a tensor { type, data, dims }, got an object without type, data, dims (a record: a per-key batcher may not add keys; send a mask as an input of its own)'),
    );
  });

  test('without `outputs`, an output named like a key with a batcher is cut along that batcher\'s outputAxis', () => {
    const b = new DictBatcher<Rec, Rec>({ inputs: { seq: new PadBatcher({ axis: 1, padAxis: 0 }), n: 0 } });
    // seq is time-major [T, 1]: batch axis 1, padded along axis 0.
    const m = b.merge([{ seq: f32([1, 2, 3], [3, 1]), n: f32([1], [1]) }, { seq: f32([4], [1, 1]), n: f32([2], [1]) }]);
    expect(m.batch.seq!.dims).toEqual([3, 2]);
    const [r0, r1] = b.split({ seq: m.batch.seq!, n: m.batch.n! }, m.ctx) as Rec[];
    expect([r0!.seq!.dims, values(r0!.seq)]).toEqual([[3, 1], [1, 2, 3]]);
    expect([r1!.seq!.dims, values(r1!.seq)]).toEqual([[3, 1], [4, 0, 0]]);
  });

  test('round trip (property): random lengths and dtypes under a padded key come back padded with padValue, in one group', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<'float32' | 'int32' | 'uint8' | 'int64'>('float32', 'int32', 'uint8', 'int64'),
        fc.array(fc.record({ length: fc.integer({ min: 1, max: 5 }), rows: fc.integer({ min: 1, max: 2 }) }), { minLength: 1, maxLength: 5 }),
        (type, specs) => {
          const padValue = type === 'int64' ? 7n : 7;
          const b = new DictBatcher<Rec, Rec>({ inputs: { seq: new PadBatcher({ padAxis: 1, padValue }), dense: 0 } });
          const items = specs.map((s, n) => ({ seq: tensor(type, [s.rows, s.length, 2], n + 1), dense: tensor('float64', [s.rows, 3], n + 50) }));
          expect(b.partition(items)).toEqual({ groups: [items.map((_, i) => i)], rejected: [] });
          const { batch, ctx, padding } = b.merge(items);
          const longest = Math.max(...specs.map((s) => s.length));
          const rows = specs.reduce((a, s) => a + s.rows, 0);
          const seqPadding = specs.reduce((a, s) => a + s.rows * (longest - s.length) * 2, 0);
          expect(padding).toBeCloseTo(seqPadding / (rows * longest * 2 + rows * 3), 12);
          b.split(batch, ctx).forEach((r, n) => {
            const { seq, dense } = r as Rec;
            const s = specs[n]!;
            expect(seq!.dims).toEqual([s.rows, longest, 2]);
            expect(plain(dense!)).toEqual(plain(items[n]!.dense));
            for (let row = 0; row < s.rows; row++) {
              for (let t = 0; t < longest; t++) {
                for (let c = 0; c < 2; c++) expect(at(seq!, row, t, c)).toBe(t < s.length ? at(items[n]!.seq, row, t, c) : padValue);
              }
            }
          });
        },
      ),
      { numRuns: 100 },
    );
  });

  test('constructor misuse: the message says what was expected and what came', () => {
    const merge = (): never => {
      throw new Error('unused');
    };
    expect(() => new DictBatcher({ inputs: { ids: { merge } as unknown as KeyAxis, x: 0 } })).toThrow(
      new TypeError("DictBatcher: expected `inputs.ids` to be a non-negative integer axis, 'shared' or a batcher (an object with `merge` and `split` methods), got an object whose `split` is not a function"),
    );
    expect(() => new DictBatcher({ inputs: { ids: 'pad' as KeyAxis } })).toThrow(
      new TypeError("DictBatcher: expected `inputs.ids` to be a non-negative integer axis, 'shared' or a batcher (an object with `merge` and `split` methods), got \"pad\" (string)"),
    );
    expect(() => new DictBatcher({ inputs: { ids: new PadBatcher() }, outputs: { y: new PadBatcher() as never } })).toThrow(
      new TypeError("DictBatcher: expected `outputs.y` to be a non-negative integer axis or 'shared', got an instance of PadBatcher (a batcher applies to inputs only; outputs are cut along an axis)"),
    );
    // A batcher counts as a batched key.
    expect(new DictBatcher({ inputs: { ids: new PadBatcher(), t: 'shared' } }).inputs.t).toBe('shared');
  });

  test('onnxruntime: a generated model with padded int64 ids and mask and a shared scalar, fed by createOnnxHost', async () => {
    const { DataType } = onnx.TensorProto;
    const INT = onnx.AttributeProto.AttributeType.INT;
    // masked [N, L] = float(ids) · float(mask); score [N] = Σ_L masked / temperature.
    const model = encodeModel({
      name: 'dict-pad',
      node: [
        { opType: 'Cast', input: ['input_ids'], output: ['idsF'], attribute: [{ name: 'to', i: DataType.FLOAT, type: INT }] },
        { opType: 'Cast', input: ['attention_mask'], output: ['maskF'], attribute: [{ name: 'to', i: DataType.FLOAT, type: INT }] },
        { opType: 'Mul', input: ['idsF', 'maskF'], output: ['masked'] },
        { opType: 'ReduceSum', input: ['masked', 'axes1'], output: ['total'], attribute: [{ name: 'keepdims', i: 0, type: INT }] },
        { opType: 'Div', input: ['total', 'temperature'], output: ['score'] },
      ],
      initializer: [int64Init('axes1', [1], [1])],
      input: [valueInfo('input_ids', DataType.INT64, ['N', 'L']), valueInfo('attention_mask', DataType.INT64, ['N', 'L']), valueInfo('temperature', DataType.FLOAT, [])],
      output: [valueInfo('score', DataType.FLOAT, ['N']), valueInfo('masked', DataType.FLOAT, ['N', 'L'])],
    });
    const events: BatchEvent[] = [];
    const host = await createOnnxHost(model, {
      maxBatchSize: 8,
      observer: { onBatch: (e) => events.push(e) },
      batcher: new DictBatcher<OnnxFeeds, OnnxResults>({
        inputs: { input_ids: new PadBatcher({ padAxis: 1, padValue: 0 }), attention_mask: new PadBatcher({ padAxis: 1, padValue: 0 }), temperature: 'shared' },
        outputs: { score: 0, masked: 0 },
      }),
    });
    const ids = [[3, 1, 4], [1], [5, 9, 2, 6]];
    const feeds = (row: number[]): OnnxFeeds => ({
      input_ids: new Tensor('int64', BigInt64Array.from(row.map(BigInt)), [1, row.length]),
      attention_mask: new Tensor('int64', BigInt64Array.from(row.map(() => 1n)), [1, row.length]),
      temperature: new Tensor('float32', Float32Array.from([2]), []),
    });
    const out = await Promise.all(ids.map((row) => host.inference(feeds(row))));
    await host.stop();
    expect(events.map((e) => [e.requests, e.modelCalls])).toEqual([[3, 1]]);
    expect(out.map((r) => values(r.score))).toEqual([[4], [0.5], [11]]);
    expect(out.map((r) => [r.masked!.dims, values(r.masked)])).toEqual([
      [[1, 4], [3, 1, 4, 0]],
      [[1, 4], [1, 0, 0, 0]],
      [[1, 4], [5, 9, 2, 6]],
    ]);
    expect(out[0]!.score).toBeInstanceOf(Tensor);
    // 4 of the 12 elements of each padded key are padding; the temperature adds 1 unpadded element.
    expect(events[0]!.paddingWaste).toBeCloseTo(8 / 25, 12);
  });
});
