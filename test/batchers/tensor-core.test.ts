import fc from 'fast-check';
import { Tensor } from 'onnxruntime-node';
import { concatInto, copyRegion, sliceAxis } from '../../src/tensor/copy';
import * as dtypes from '../../src/tensor/dtypes';
import { allocate, coercePadValue, dataMatchesType, DTYPES, type TensorType } from '../../src/tensor/dtypes';
import { makeTensorLike, tensorBuilder, tensorFault } from '../../src/tensor/tensor-like';
import { ALL_TYPES, at, plain, tensor } from './tensors';

describe('dtype table', () => {
  const expected: Record<TensorType, string> = {
    float32: 'Float32Array', float64: 'Float64Array', float16: 'Uint16Array', int8: 'Int8Array', int16: 'Int16Array',
    int32: 'Int32Array', int64: 'BigInt64Array', uint8: 'Uint8Array', uint16: 'Uint16Array', uint32: 'Uint32Array',
    uint64: 'BigUint64Array', bool: 'Uint8Array', string: 'Array',
  };
  test.each(ALL_TYPES)('%s allocates and accepts its array class, and no other', (type) => {
    const data = allocate(type, 3);
    expect(Object.prototype.toString.call(data)).toBe(`[object ${expected[type]}]`);
    expect(dataMatchesType(type, data)).toBe(true);
    const other = type === 'float64' ? new Float32Array(3) : new Float64Array(3);
    expect(dataMatchesType(type, other)).toBe(false);
  });

  test('allocate copies the array class of a sample, so Uint8ClampedArray and cross-class inputs keep theirs', () => {
    expect(allocate('uint8', 2, new Uint8ClampedArray(1))).toBeInstanceOf(Uint8ClampedArray);
  });

  test('pad values are converted to the element type, and wrong kinds are refused with the expectation', () => {
    expect(coercePadValue('int64', 3, 'x')).toBe(3n);
    expect(coercePadValue('bool', true, 'x')).toBe(1);
    expect(coercePadValue('float32', 2n, 'x')).toBe(2);
    expect(() => coercePadValue('int64', 1.5, 'PadBatcher')).toThrow(new TypeError('PadBatcher: expected an integer pad value for a int64 tensor, got 1.5'));
    expect(() => coercePadValue('float32', 'x', 'PadBatcher')).toThrow(new TypeError('PadBatcher: expected a numeric pad value for a float32 tensor, got the string "x"'));
    expect(() => coercePadValue('string', 0, 'PadBatcher')).toThrow(new TypeError('PadBatcher: expected a string pad value for a string tensor, got 0 (number)'));
  });
});

describe('tensorFault', () => {
  test('accepts a well-formed tensor of every dtype', () => {
    for (const type of ALL_TYPES) expect(tensorFault(tensor(type, [2, 3]))).toBeNull();
  });
  test.each([
    ['a number', 42, 'a tensor { type, data, dims }', '42 (number)'],
    ['no data', { type: 'float32', dims: [1] }, 'a tensor { type, data, dims }', 'an object without data'],
    ['a number[] for float32', { type: 'float32', data: [1], dims: [1] }, 'float32 data in a Float32Array', 'an Array'],
    ['an unknown dtype', { type: 'complex64', data: new Float32Array(2), dims: [2] }, expect.stringContaining('a tensor type among float32'), 'type "complex64"'],
    ['too much data', { type: 'float32', data: new Float32Array(5), dims: [1, 4] }, '4 elements for dims [1, 4]', 'data of length 5'],
    ['Int32Array for int64', { type: 'int64', data: new Int32Array(2), dims: [2] }, 'int64 data in a BigInt64Array', 'an Int32Array'],
    ['fractional dims', { type: 'float32', data: new Float32Array(2), dims: [2.5] }, 'dims of non-negative integers', 'dims [2.5]'],
    ['a number in string data', { type: 'string', data: ['a', 3], dims: [2] }, 'string data', '3 (number) at element 1'],
  ])('%s is refused with what was expected and what came', (_name, value, expected, actual) => {
    expect(tensorFault(value)).toEqual({ expected, actual });
  });
});

/** The reference: element-by-element concatenation through multi-indexes. */
function naiveConcat(parts: ReturnType<typeof tensor>[], axis: number): unknown[] {
  const dims = [...parts[0]!.dims];
  dims[axis] = parts.reduce((s, p) => s + p.dims[axis]!, 0);
  const out: unknown[] = [];
  const idx = new Array<number>(dims.length).fill(0);
  const total = dims.reduce((a, b) => a * b, 1);
  for (let n = 0; n < total; n++) {
    let rem = n;
    for (let a = dims.length - 1; a >= 0; a--) {
      idx[a] = rem % dims[a]!;
      rem = Math.floor(rem / dims[a]!);
    }
    let k = idx[axis]!;
    let p = 0;
    while (k >= parts[p]!.dims[axis]!) k -= parts[p++]!.dims[axis]!;
    const local = [...idx];
    local[axis] = k;
    out.push(at(parts[p]!, ...local));
  }
  return out;
}

describe('copy helpers', () => {
  test('concatInto matches an element-wise reference along any axis, for any dtype (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ALL_TYPES),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }),
        (type, base, axisSeed, sizes) => {
          const axis = axisSeed % base.length;
          const parts = sizes.map((s, i) => tensor(type, base.map((d, a) => (a === axis ? s : d)), i + 1));
          const { data, dims } = concatInto(type, parts, axis);
          expect(dims[axis]).toBe(sizes.reduce((a, b) => a + b, 0));
          expect(Array.from(data as ArrayLike<unknown>)).toEqual(naiveConcat(parts, axis));
        },
      ),
      { numRuns: 150 },
    );
  });

  test('long runs (set/subarray path) and short runs (loop path) give the same result', () => {
    const a = tensor('float32', [2, 40], 1);
    const b = tensor('float32', [3, 40], 2);
    expect(Array.from(concatInto('float32', [a, b], 0).data as Float32Array)).toEqual(naiveConcat([a, b], 0));
    expect(Array.from(concatInto('float32', [tensor('float32', [40, 2], 3), tensor('float32', [40, 1], 4)], 1).data as Float32Array)).toEqual(
      naiveConcat([tensor('float32', [40, 2], 3), tensor('float32', [40, 1], 4)], 1),
    );
  });

  test('padding places each block at the start of the pad axis and fills the rest with the pad value', () => {
    const a = { type: 'int32', data: new Int32Array([1, 2, 3]), dims: [1, 3] };
    const b = { type: 'int32', data: new Int32Array([4]), dims: [1, 1] };
    const { data, dims } = concatInto('int32', [a, b], 0, { axis: 1, length: 4, value: -1 });
    expect(dims).toEqual([2, 4]);
    expect(Array.from(data as Int32Array)).toEqual([1, 2, 3, -1, 4, -1, -1, -1]);
  });

  test('sliceAxis copies (the result does not alias the source) and can trim another axis', () => {
    const t = tensor('float64', [3, 4], 9);
    const s = sliceAxis('float64', t.data, t.dims, 0, 1, 2, { axis: 1, keep: 2 });
    expect(s.dims).toEqual([2, 2]);
    expect(Array.from(s.data as Float64Array)).toEqual([at(t, 1, 0), at(t, 1, 1), at(t, 2, 0), at(t, 2, 1)]);
    (s.data as Float64Array)[0] = 12345;
    expect(at(t, 1, 0)).not.toBe(12345);
    const col = sliceAxis('float64', t.data, t.dims, 1, 3, 1);
    expect(Array.from(col.data as Float64Array)).toEqual([at(t, 0, 3), at(t, 1, 3), at(t, 2, 3)]);
  });

  test('copyRegion copies a rank-0 scalar and ignores empty regions', () => {
    const dst = new Float32Array(1);
    copyRegion(new Float32Array([7]), [], [], dst, [], [], []);
    expect(dst[0]).toBe(7);
    const untouched = new Float32Array([5]);
    copyRegion(new Float32Array(0), [0, 2], [0, 0], untouched, [1, 1], [0, 0], [0, 2]);
    expect(untouched[0]).toBe(5);
  });
});

describe('each input is copied once, into a batch buffer allocated at its final size', () => {
  afterEach(() => jest.restoreAllMocks());

  /** A string[] that counts how often each of its elements is read. */
  function counted(values: string[]): { data: string[]; reads: number[] } {
    const reads = new Array<number>(values.length).fill(0);
    const data = new Proxy(values, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads[Number(key)]! += 1;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    return { data, reads };
  }

  const letters = (n: number, from: number): string[] => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + from + i));

  test.each([
    ['axis 0', 0, [[2, 3], [1, 3], [1, 3]], undefined],
    ['axis 1 (strided)', 1, [[3, 2], [3, 1], [3, 3]], undefined],
    ['axis 0, padded on axis 1', 0, [[2, 3], [1, 1], [1, 4]], { axis: 1, length: 4, value: '_' }],
  ] as const)('%s: one allocation of the batch size, every input element read exactly once', (_name, axis, shapes, pad) => {
    const alloc = jest.spyOn(dtypes, 'allocate');
    let next = 0;
    const parts = shapes.map((dims) => {
      const size = dims[0] * dims[1];
      const part = { ...counted(letters(size, next)), dims };
      next += size;
      return part;
    });
    const { data, dims } = concatInto('string', parts, axis, pad);
    const size = dims.reduce((a, b) => a * b, 1);
    expect(alloc).toHaveBeenCalledTimes(1);
    expect(alloc.mock.calls[0]![1]).toBe(size);
    expect((data as string[]).length).toBe(size);
    for (const p of parts) expect(p.reads).toEqual(p.reads.map(() => 1));
  });

  test('typed arrays on axis 0: one contiguous copy per input (one subarray each), one allocation', () => {
    let views = 0;
    class Counting extends Float32Array {
      override subarray(begin?: number, end?: number): Float32Array<ArrayBuffer> {
        views++;
        return super.subarray(begin, end);
      }
    }
    const alloc = jest.spyOn(dtypes, 'allocate');
    const blocks = [1, 2, 3].map((rows) => ({ data: new Counting(rows * 40).fill(rows), dims: [rows, 40] }));
    const { data, dims } = concatInto('float32', blocks, 0);
    expect(dims).toEqual([6, 40]);
    expect(alloc).toHaveBeenCalledTimes(1);
    expect(views).toBe(3);
    expect(Array.from(data as Float32Array)).toEqual([...new Array<number>(40).fill(1), ...new Array<number>(80).fill(2), ...new Array<number>(120).fill(3)]);
  });
});

describe('tensor construction', () => {
  test('plain objects in give plain objects out', () => {
    const out = makeTensorLike({ type: 'float32', data: new Float32Array(1), dims: [1] }, 'float32', new Float32Array(2), [2]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(plain(out)).toEqual({ type: 'float32', dims: [2], kind: '[object Float32Array]', data: [0, 0] });
  });

  test('onnxruntime tensors in give onnxruntime tensors out, through new ctor(type, data, dims), for every dtype', () => {
    for (const type of ALL_TYPES) {
      const src = tensor(type, [2]);
      const sample = new Tensor(type as Tensor.Type, src.data as never, [2]);
      const out = makeTensorLike(sample, type, src.data, [1, 2]);
      expect(out).toBeInstanceOf(Tensor);
      expect(plain(out)).toEqual(plain({ ...src, dims: [1, 2] }));
    }
  });

  test('a tensor option replaces the default, and a non-function is refused', () => {
    const build = tensorBuilder((type, data, dims) => ({ type, data, dims, tag: 'mine' }), 'ConcatBatcher');
    expect(build({}, 'int8', new Int8Array(1), [1])).toMatchObject({ tag: 'mine' });
    expect(() => tensorBuilder(42 as never, 'ConcatBatcher')).toThrow(
      new TypeError('ConcatBatcher: expected `tensor` to be a function (type, data, dims) => tensor, got 42 (number)'),
    );
  });

  test('the dtype table and the typed-array checks agree for each entry', () => {
    for (const type of ALL_TYPES) expect(dataMatchesType(type, DTYPES[type].make(1))).toBe(true);
  });
});
