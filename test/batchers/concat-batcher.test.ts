import fc from 'fast-check';
import { Tensor } from 'onnxruntime-node';
import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import { TensorInputError } from '../../src/batchers/tensor-input-error';
import type { TensorInput } from '../../src/batchers/tensor-items';
import { BatchSizeMismatchError } from '../../src/core/errors';
import type { TensorType } from '../../src/tensor/dtypes';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { ALL_TYPES, at, plain, plainAll, tensor } from './tensors';

/** Runs items through partition, merge, the model and split, as the engine does. */
function roundTrip<In, Out>(
  b: { partition(items: readonly In[]): { groups: ReadonlyArray<ReadonlyArray<number>>; rejected?: ReadonlyArray<{ index: number; error: Error }> }; merge(items: readonly In[]): { batch: In; ctx: unknown }; split(o: Out, ctx: never): ReadonlyArray<Out | Error> },
  items: readonly In[],
  model: (batch: In) => Out,
): Array<Out | Error> {
  const results = new Array<Out | Error>(items.length);
  const { groups, rejected = [] } = b.partition(items);
  for (const { index, error } of rejected) results[index] = error;
  for (const group of groups) {
    const { batch, ctx } = b.merge(group.map((i) => items[i]!));
    const out = b.split(model(batch), ctx as never);
    group.forEach((i, k) => (results[i] = out[k]!));
  }
  return results;
}

const shapeArb = fc.record({
  type: fc.constantFrom(...ALL_TYPES),
  base: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 4 }),
  axisSeed: fc.nat(),
  rows: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 6 }),
});

describe('ConcatBatcher round trip (property)', () => {
  test('merge then split through an identity model returns every item unchanged, in order, for any dtype, rank, axis and row counts', () => {
    fc.assert(
      fc.property(shapeArb, ({ type, base, axisSeed, rows }) => {
        const axis = axisSeed % base.length;
        const items = rows.map((r, i) => tensor(type, base.map((d, a) => (a === axis ? r : d)), i + 7));
        const b = new ConcatBatcher({ axis });
        items.forEach((it, i) => expect(b.rows(it)).toBe(rows[i]));
        const { groups, rejected } = b.partition(items);
        expect(groups).toEqual([items.map((_, i) => i)]);
        expect(rejected).toEqual([]);
        const results = roundTrip(b, items, (x) => x);
        expect(results.map((r) => plain(r as TensorLike))).toEqual(items.map(plain));
      }),
      { numRuns: 200 },
    );
  });

  test('tuples and records of tensors of different dtypes round-trip, and mixed shapes are grouped and still answered in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ rows: fc.integer({ min: 1, max: 3 }), width: fc.integer({ min: 1, max: 2 }) }), { minLength: 1, maxLength: 6 }),
        fc.constantFrom<TensorType>(...ALL_TYPES),
        fc.constantFrom<TensorType>(...ALL_TYPES),
        fc.boolean(),
        (specs, t1, t2, asRecord) => {
          const items = specs.map(({ rows, width }, i) => {
            const a = tensor(t1, [rows, width], i + 1);
            const b = tensor(t2, [rows, 2, 2], i + 100);
            return (asRecord ? { a, b } : [a, b]) as TensorInput;
          });
          const batcher = new ConcatBatcher<TensorInput>();
          const results = roundTrip(batcher, items, (x) => x);
          expect(results.map(plainAll)).toEqual(items.map(plainAll));
          const widths = new Set(specs.map((s) => s.width));
          expect(batcher.partition(items).groups).toHaveLength(widths.size);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('ConcatBatcher merge and split', () => {
  test('axis 0 puts items one after another; pre-batched items keep their rows together', () => {
    const a = { type: 'float32', data: new Float32Array([1, 2, 3, 4]), dims: [2, 2] };
    const b = { type: 'float32', data: new Float32Array([5, 6]), dims: [1, 2] };
    const { batch, ctx } = new ConcatBatcher().merge([a, b]);
    expect(plain(batch)).toEqual({ type: 'float32', dims: [3, 2], kind: '[object Float32Array]', data: [1, 2, 3, 4, 5, 6] });
    expect(ctx).toEqual({ rows: [2, 1], total: 3 });
  });

  test('axis 1 interleaves (strided copy): [2,1,2] + [2,2,2] → [2,3,2]', () => {
    const a = { type: 'int32', data: new Int32Array([1, 2, 3, 4]), dims: [2, 1, 2] };
    const b = { type: 'int32', data: new Int32Array([5, 6, 7, 8, 9, 10, 11, 12]), dims: [2, 2, 2] };
    const { batch } = new ConcatBatcher({ axis: 1 }).merge([a, b]);
    expect(batch.dims).toEqual([2, 3, 2]);
    expect(Array.from(batch.data as Int32Array)).toEqual([1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12]);
  });

  test('multi-output models: a record of outputs is cut per item along outputAxis', () => {
    const items = [tensor('float32', [1, 4], 1), tensor('float32', [2, 4], 2)];
    const b = new ConcatBatcher<TensorLike, Record<string, TensorLike>>({ outputAxis: 1 });
    const { batch, ctx } = b.merge(items);
    expect(batch.dims).toEqual([3, 4]);
    const logits = tensor('float32', [5, 3], 3); // rows on axis 1
    const scores = tensor('int64', [2, 3, 1], 4);
    const [r0, r1] = b.split({ logits, scores }, ctx) as Array<Record<string, TensorLike>>;
    expect(r0!.logits!.dims).toEqual([5, 1]);
    expect(r1!.scores!.dims).toEqual([2, 2, 1]);
    expect(at(r1!.logits!, 4, 1)).toBe(at(logits, 4, 2));
    expect(at(r1!.scores!, 1, 0, 0)).toBe(at(scores, 1, 1, 0));
  });

  test('the results own their data: writing one does not change the model output or another result', () => {
    const out = tensor('float64', [2, 2], 5);
    const b = new ConcatBatcher();
    const [r0] = b.split(out, { rows: [1, 1], total: 2 }) as TensorLike[];
    (r0!.data as Float64Array)[0] = 99;
    expect((out.data as Float64Array)[0]).not.toBe(99);
  });

  test('onnxruntime tensors in give onnxruntime tensors out, without the batcher importing onnxruntime', () => {
    const b = new ConcatBatcher<Tensor>();
    const { batch, ctx } = b.merge([new Tensor('float32', new Float32Array([1, 2]), [1, 2]), new Tensor('float32', new Float32Array([3, 4]), [1, 2])]);
    expect(batch).toBeInstanceOf(Tensor);
    const parts = b.split(new Tensor('int64', new BigInt64Array([7n, 8n]), [2]), ctx) as Tensor[];
    expect(parts[1]).toBeInstanceOf(Tensor);
    expect(Array.from(parts[1]!.data as BigInt64Array)).toEqual([8n]);
  });

  test('the tensor option builds batches and results', () => {
    const made: string[] = [];
    const b = new ConcatBatcher({ tensor: (type, data, dims) => (made.push(type), { type, data, dims }) });
    const { batch, ctx } = b.merge([tensor('uint8', [1, 2]), tensor('uint8', [1, 2], 2)]);
    b.split(batch, ctx);
    expect(made).toEqual(['uint8', 'uint8', 'uint8']);
  });
});

describe('ConcatBatcher bad input (rejected alone, message names input, expected and actual)', () => {
  const ok = (): TensorLike => tensor('float32', [1, 3], 1);

  test.each<[string, unknown, ConstructorParameters<typeof ConcatBatcher>[0], string]>([
    ['not a tensor', 'hello', {}, 'ConcatBatcher: the request: expected a tensor or an array of tensors or a record of tensors, got "hello" (string)'],
    ['data longer than dims', { type: 'float32', data: new Float32Array(4), dims: [1, 3] }, {}, 'ConcatBatcher: the input: expected 3 elements for dims [1, 3], got data of length 4'],
    ['wrong array for dtype', { type: 'int64', data: new Int32Array(3), dims: [1, 3] }, {}, 'ConcatBatcher: the input: expected int64 data in a BigInt64Array, got an Int32Array'],
    ['rank too small for the axis', { type: 'float32', data: new Float32Array(3), dims: [3] }, { axis: 1 }, 'ConcatBatcher: the input: expected a tensor of rank 2 or more (batch axis 1), got shape [3]'],
    ['a shape the batcher refuses', tensor('float32', [1, 4]), { shape: [-1, 3] }, 'ConcatBatcher: the input: expected shape [*, 3], got shape [1, 4]'],
    ['a rank the batcher refuses', tensor('float32', [1, 3, 1]), { shape: [-1, 3] }, 'ConcatBatcher: the input: expected shape [*, 3], got shape [1, 3, 1]'],
    ['tuple members with different row counts', [tensor('float32', [2, 3]), tensor('int32', [1, 3])], {}, 'ConcatBatcher: input[1]: expected 2 rows on axis 0, as input[0] has, got shape [1, 3] with 1'],
    ['a record with a malformed member', { x: tensor('float32', [1, 3]), y: 5 }, {}, 'ConcatBatcher: input "y": expected a tensor { type, data, dims }, got 5 (number)'],
    ['a tuple member with the wrong shape', [tensor('float32', [1, 3]), tensor('float32', [1, 2])], { shape: [[-1, 3], [-1, 3]] }, 'ConcatBatcher: input[1]: expected shape [*, 3], got shape [1, 2]'],
  ])('%s: rows() throws, partition rejects it and batches the rest', (_name, bad, options, message) => {
    const b = new ConcatBatcher(options);
    expect(() => b.rows(bad as TensorLike)).toThrow(TensorInputError);
    expect(() => b.rows(bad as TensorLike)).toThrow(message);
    const good = Array.isArray(bad) ? [ok(), ok()] : typeof bad === 'object' && bad !== null && !('dims' in bad) ? { x: ok(), y: ok() } : ok();
    const p = b.partition([good as TensorLike, bad as TensorLike, good as TensorLike]);
    expect(p.groups).toEqual([[0, 2]]);
    expect(p.rejected).toHaveLength(1);
    expect(p.rejected![0]!.index).toBe(1);
    expect(p.rejected![0]!.error).toBeInstanceOf(TensorInputError);
    expect(p.rejected![0]!.error.message).toBe(message);
  });

  test('record items with unknown or missing keys (against the first item) are rejected naming the key', () => {
    const b = new ConcatBatcher<Record<string, TensorLike>>();
    const p = b.partition([{ a: ok(), b: ok() }, { a: ok(), b: ok(), c: ok() }, { a: ok() }, { b: ok(), a: ok() }]);
    expect(p.groups).toEqual([[0, 3]]);
    expect(p.rejected!.map((r) => [r.index, r.error.message])).toEqual([
      [1, 'ConcatBatcher: input "c": expected only the keys of the first item of the batch (a, b), got an unknown key "c"'],
      [2, 'ConcatBatcher: input "b": expected a tensor, as in the first item of the batch (keys a, b), got no such key'],
    ]);
    expect((p.rejected![1]!.error as TensorInputError).input).toBe('input "b"');
  });

  test('a tuple of another length, or a tensor among tuples, is rejected with both layouts named', () => {
    const p = new ConcatBatcher().partition([[ok(), ok()], [ok()], ok()] as never);
    expect(p.rejected!.map((r) => r.error.message)).toEqual([
      'ConcatBatcher: the request: expected a tuple of 2 tensors like the first item of the batch, got a tuple of 1 tensors',
      'ConcatBatcher: the request: expected a tuple of 2 tensors like the first item of the batch, got a single tensor',
    ]);
  });

  test('different dtypes or non-batch dims are not refused but grouped, in order of first appearance', () => {
    const items = [tensor('float32', [1, 3]), tensor('float64', [1, 3]), tensor('float32', [2, 3]), tensor('float32', [1, 4])];
    expect(new ConcatBatcher().partition(items)).toEqual({ groups: [[0, 2], [1], [3]], rejected: [] });
  });

  test('merge refuses items that partition would have separated, naming both signatures', () => {
    expect(() => new ConcatBatcher().merge([tensor('float32', [1, 3]), tensor('float32', [1, 4])])).toThrow(
      'ConcatBatcher: the input: expected float32 [*, 3] like the first item of the batch (partition groups items by shape), got float32 [*, 4] in item 1',
    );
    expect(() => new ConcatBatcher().merge([])).toThrow(RangeError);
  });

  test('split: an output with the wrong row count throws BatchSizeMismatchError naming both numbers', () => {
    const b = new ConcatBatcher();
    const { ctx } = b.merge([tensor('float32', [2, 3]), tensor('float32', [1, 3])]);
    const run = (): unknown => b.split(tensor('float32', [2, 5]), ctx);
    expect(run).toThrow(BatchSizeMismatchError);
    expect(run).toThrow('ConcatBatcher: the batch function\'s output must have one row per input row on axis 0: expected 3 rows (2 requests), got 2 (shape [2, 5])');
    try {
      run();
    } catch (e) {
      expect(e).toMatchObject({ expected: 3, actual: 2 });
    }
    expect(() => b.split({ y: tensor('float32', [3]), z: tensor('float32', [4]) } as never, ctx)).toThrow(/output "z" must have one row per input row on axis 0: expected 3 rows \(2 requests\), got 4/);
    expect(() => new ConcatBatcher({ outputAxis: 2 }).split(tensor('float32', [3, 1]), ctx)).toThrow(/expected 3 rows \(2 requests\), got shape \[3, 1\] with no axis 2/);
  });

  test('split: an output that is not a tensor throws a TypeError saying what came', () => {
    const b = new ConcatBatcher();
    expect(() => b.split(42 as never, { rows: [1], total: 1 })).toThrow(
      new TypeError('ConcatBatcher: the batch function must return a tensor, an array or a record of tensors with 1 rows on axis 0; it returned 42 (number)'),
    );
    expect(() => b.split({ y: { type: 'float32', data: [1], dims: [1] } } as never, { rows: [1], total: 1 })).toThrow(
      'ConcatBatcher: the batch function\'s output "y": expected float32 data in a Float32Array, got an Array',
    );
  });

  test('options are checked when the batcher is made', () => {
    expect(() => new ConcatBatcher({ axis: -1 })).toThrow(new TypeError('ConcatBatcher: expected `axis` to be a non-negative integer axis, got -1 (number)'));
    expect(() => new ConcatBatcher({ axsi: 1 } as never)).toThrow(new TypeError('ConcatBatcher: unknown option "axsi"; expected one of axis, outputAxis, shape, tensor, outputViews'));
    expect(() => new ConcatBatcher({ shape: ['x'] as never })).toThrow(
      new TypeError('ConcatBatcher: expected `shape` to be a shape (integers, -1 for any size), an array of shapes or a record of shapes, got an array of length 1'),
    );
  });
});
