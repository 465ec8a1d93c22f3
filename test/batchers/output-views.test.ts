import { ConcatBatcher } from '../../src/batchers/concat-batcher';
import { PadBatcher } from '../../src/batchers/pad-batcher';
import type { TensorLike } from '../../src/tensor/tensor-like';

const t = (data: number[], dims: number[]): TensorLike => ({ type: 'float32', data: Float32Array.from(data), dims });

describe('outputViews: each caller gets a view into the batch output where the rows are contiguous', () => {
  test('ConcatBatcher: views share the output buffer and hold the same values a copy would', () => {
    const items = [t([1, 2], [1, 2]), t([3, 4, 5, 6], [2, 2])];
    const output = t([10, 20, 30, 40, 50, 60], [3, 2]);
    const viewing = new ConcatBatcher({ outputViews: true });
    const copying = new ConcatBatcher();
    const v = viewing.split(output, viewing.merge(items).ctx) as TensorLike[];
    const c = copying.split(output, copying.merge(items).ctx) as TensorLike[];
    expect(v.map((x) => [Array.from(x.data as Float32Array), x.dims])).toEqual(c.map((x) => [Array.from(x.data as Float32Array), x.dims]));
    expect(v.map((x) => [Array.from(x.data as Float32Array), x.dims])).toEqual([
      [[10, 20], [1, 2]],
      [[30, 40, 50, 60], [2, 2]],
    ]);
    for (const x of v) expect((x.data as Float32Array).buffer).toBe((output.data as Float32Array).buffer);
    for (const x of c) expect((x.data as Float32Array).buffer).not.toBe((output.data as Float32Array).buffer);
    // A view is bounded to its own rows: the caller cannot reach a neighbour's.
    expect((v[0]!.data as Float32Array).length).toBe(2);
  });

  test('rows that are not contiguous (a batch axis after a leading axis > 1) are copied', () => {
    const b = new ConcatBatcher({ axis: 0, outputAxis: 1, outputViews: true });
    const items = [t([1], [1, 1]), t([2], [1, 1])];
    const output = t([1, 2, 3, 4], [2, 2]); // [2 heads, 2 rows]: each item's rows are strided
    const out = b.split(output, b.merge(items).ctx) as TensorLike[];
    expect(out.map((x) => Array.from(x.data as Float32Array))).toEqual([
      [1, 3],
      [2, 4],
    ]);
    for (const x of out) expect((x.data as Float32Array).buffer).not.toBe((output.data as Float32Array).buffer);
  });

  test('PadBatcher: views where nothing is un-padded, copies where it trims', () => {
    const items = [t([1, 2], [1, 2]), t([3], [1, 1])];
    const plain = new PadBatcher({ outputViews: true });
    const outPlain = plain.split(t([7, 8], [2, 1]), plain.merge(items).ctx) as TensorLike[];
    expect(outPlain.map((x) => Array.from(x.data as Float32Array))).toEqual([[7], [8]]);
    expect((outPlain[1]!.data as Float32Array).buffer).toBe((outPlain[0]!.data as Float32Array).buffer);
    const trimming = new PadBatcher({ outputViews: true, unpadAxis: 1 });
    const out = t([1, 2, 3, 4], [2, 2]);
    const trimmed = trimming.split(out, trimming.merge(items).ctx) as TensorLike[];
    expect(trimmed.map((x) => [Array.from(x.data as Float32Array), x.dims])).toEqual([
      [[1, 2], [1, 2]],
      [[3], [1, 1]],
    ]);
    expect((trimmed[1]!.data as Float32Array).buffer).not.toBe((out.data as Float32Array).buffer);
  });

  test('a non-boolean outputViews is refused with the expected type named', () => {
    expect(() => new ConcatBatcher({ outputViews: 'yes' as unknown as boolean })).toThrow(new TypeError('ConcatBatcher: expected `outputViews` to be a boolean, got "yes" (string)'));
    expect(() => new PadBatcher({ outputViews: 1 as unknown as boolean })).toThrow(new TypeError('PadBatcher: expected `outputViews` to be a boolean, got 1 (number)'));
  });
});
