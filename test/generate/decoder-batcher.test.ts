import { DecoderBatcher } from '../../src/generate/decoder-batcher';
import type { TensorLike } from '../../src/tensor/tensor-like';

// The feeds a DecoderBatcher builds from running sequences and the states it cuts back, on plain
// tensors; then every misuse, with its message.

const f32 = (values: number[], dims: number[]): TensorLike => ({ type: 'float32', data: Float32Array.from(values), dims });

describe('DecoderBatcher', () => {
  test('fixed-size state is concatenated; a growing cache is left-padded with a mask; outputs are cut back per sequence', () => {
    const b = new DecoderBatcher({ token: 'ids', logits: 'scores', state: { h: 'h_out' }, cache: { k: 'k_out' }, maskKey: 'mask' });
    const items = [
      { token: 3, position: 0, state: { h: f32([1, 2], [1, 2]), k: f32([], [1, 0, 1]) } },
      { token: 7, position: 2, state: { h: f32([3, 4], [1, 2]), k: f32([5, 6], [1, 2, 1]) } },
    ];
    const { batch, ctx, padding } = b.merge(items);
    expect(batch.ids).toEqual({ type: 'int64', data: BigInt64Array.from([3n, 7n]), dims: [2] });
    expect(batch.h).toEqual(f32([1, 2, 3, 4], [2, 2]));
    expect(batch.k).toEqual(f32([0, 0, 5, 6], [2, 2, 1])); // the empty cache is all padding, at the start
    expect(batch.mask).toEqual({ type: 'int64', data: BigInt64Array.from([0n, 0n, 1n, 1n]), dims: [2, 2] });
    expect(ctx).toEqual({ lengths: [0, 2], padded: 2 });
    expect(padding).toBe(0.5);

    const out = b.split({ scores: f32([0, 1, 1, 0], [2, 2]), h_out: f32([9, 8, 7, 6], [2, 2]), k_out: f32([0, 0, 10, 5, 6, 20], [2, 3, 1]) }, ctx);
    expect(out).toEqual([
      { logits: Float32Array.from([0, 1]), state: { h: f32([9, 8], [1, 2]), k: f32([10], [1, 1, 1]) } },
      { logits: Float32Array.from([1, 0]), state: { h: f32([7, 6], [1, 2]), k: f32([5, 6, 20], [1, 3, 1]) } },
    ]);
  });

  test('int32 tokens and a float mask when asked', () => {
    const b = new DecoderBatcher({ token: 'ids', tokenType: 'int32', logits: 'scores', cache: { k: 'k_out' }, maskKey: 'mask', maskType: 'float32' });
    const { batch } = b.merge([{ token: 1, position: 0, state: { k: f32([1], [1, 1, 1]) } }]);
    expect(batch.ids).toEqual({ type: 'int32', data: Int32Array.from([1]), dims: [1] });
    expect(batch.mask).toEqual(f32([1], [1, 1]));
  });

  test('bad options are refused with what was expected', () => {
    const make = (o: object) => () => new DecoderBatcher(o as never);
    expect(make({ logits: 'l', state: { s: 's' } })).toThrow(new TypeError('DecoderBatcher: expected `token` to be an input or output name (a non-empty string), got undefined'));
    expect(make({ token: 't', logits: 'l' })).toThrow(
      new TypeError('DecoderBatcher: expected `state` or `cache` to name at least one input, got neither (a decoder without state needs no DecoderBatcher)'),
    );
    expect(make({ token: 't', logits: 'l', state: { s: 's' }, maskKey: 'm' })).toThrow(
      new TypeError('DecoderBatcher: `maskKey` masks the padding of a growing `cache`, but no `cache` is given'),
    );
    expect(make({ token: 't', logits: 'l', state: { s: 3 } })).toThrow(new TypeError('DecoderBatcher: expected `state.s` to be an output name (a non-empty string), got 3 (number)'));
    expect(make({ token: 't', logits: 'l', state: { s: 's' }, tokenType: 'float32' })).toThrow(new TypeError("DecoderBatcher: expected `tokenType` to be 'int64' or 'int32', got \"float32\" (string)"));
    expect(make({ token: 't', logits: 'l', state: { s: 's' }, lgits: 'x' })).toThrow(/DecoderBatcher: unknown option `lgits`/);
  });

  test('a state that is missing, not one row, or of another shape, and outputs that do not fit, are named', () => {
    const b = new DecoderBatcher({ token: 't', logits: 'l', state: { s: 's_out' }, cache: { k: 'k_out' } });
    const ok = { s: f32([1], [1, 1]), k: f32([], [1, 0, 1]) };
    expect(() => b.merge([{ token: 0, position: 0, state: { k: ok.k } as never }])).toThrow(/^DecoderBatcher: the state of sequence 0 should hold a tensor "s" \(.*\), got none$/);
    expect(() => b.merge([{ token: 0, position: 0, state: { ...ok, s: f32([1, 2], [2, 1]) } }])).toThrow(
      new TypeError('DecoderBatcher: state "s" of sequence 0 should be [1, ...] with 1 axes at least (one sequence\'s row), got [2, 1]'),
    );
    expect(() => b.merge([{ token: 0, position: 0, state: ok }, { token: 0, position: 0, state: { ...ok, s: f32([1, 2], [1, 2]) } }])).toThrow(
      new TypeError('DecoderBatcher: state "s" of sequence 1 is float32[1, 2], but sequence 0\'s is float32[1, 1]; fixed-size state must agree'),
    );
    const { ctx } = b.merge([{ token: 0, position: 0, state: ok }]);
    expect(() => b.split({ l: f32([1], [1, 1]) }, ctx)).toThrow(new TypeError('DecoderBatcher: the step\'s output has no "s_out"; it has "l"'));
    expect(() => b.split({ l: f32([1], [1, 1]), s_out: f32([1], [1, 1]), k_out: f32([1, 2], [1, 2, 1]) }, ctx)).toThrow(
      new TypeError('DecoderBatcher: output "k_out" should have 1 entries on axis 1 (the 0 of the padded past plus the new one), got [1, 2, 1]'),
    );
    expect(() => b.split({ l: f32([1, 2], [2, 1]) }, ctx)).toThrow(new TypeError('DecoderBatcher: output "l" should have 1 rows (one per sequence), got [2, 1]'));
  });
});
