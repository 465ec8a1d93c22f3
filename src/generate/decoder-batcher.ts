import type { Batcher, Merged } from '../core/batcher';
import { describe } from '../core/describe';
import { fail, rejectUnknownKeys } from '../core/options';
import { concatInto, copyRegion } from '../tensor/copy';
import { allocate, DTYPES, isTensorType, type TensorData, type TensorType } from '../tensor/dtypes';
import { formatShape, sizeOf, tensorBuilder, tensorFault, type TensorFactory, type TensorLike } from '../tensor/tensor-like';
import type { StepInput, StepOutput } from './options';

/** A sequence's state for a {@link DecoderBatcher}: one tensor per state or cache input, by input name. */
export type DecoderState<T extends TensorLike = TensorLike> = Readonly<Record<string, T>>;

/**
 * Options of {@link DecoderBatcher}: which of an ONNX decoder's inputs and outputs carry the
 * token, the scores, and the state between steps.
 *
 * @example
 * ```ts
 * // A decoder with a growing key/value cache and an attention mask over the past:
 * const options: DecoderBatcherOptions = {
 *   token: 'token', logits: 'logits',
 *   cache: { past_key: 'present_key', past_value: 'present_value' }, maskKey: 'mask', maskType: 'float32',
 * };
 * ```
 */
export interface DecoderBatcherOptions {
  /** The input that takes the step's token ids, `[N]`. */
  token: string;
  /**
   * The token input's dtype.
   * @default 'int64'
   */
  tokenType?: 'int64' | 'int32';
  /** The output with the next token's scores, `[N, V]`. */
  logits: string;
  /**
   * Fixed-size state, `{ input: output }`: each sequence holds a `[1, ...]` tensor per input; the
   * step's inputs are the sequences' rows concatenated on axis 0, and each output's rows become
   * the sequences' next state.
   * @default none
   */
  state?: Readonly<Record<string, string>>;
  /**
   * A cache that grows by one entry per step, `{ input: output }`: each sequence holds a
   * `[1, t, ...]` tensor per input (`t` entries so far, `[1, 0, ...]` at first). The step's input
   * is left-padded on axis 1 to the longest `T` in the step (a shorter sequence's zero rows come
   * first), and each output, `[N, T + 1, ...]` (the past plus the new entry), is cut back to the
   * sequence's own last `t + 1` entries. All cache inputs of a sequence must have the same `t`.
   * @default none
   */
  cache?: Readonly<Record<string, string>>;
  /**
   * With `cache`: the input that takes the attention mask over the past, `[N, T]`: 1 where a
   * sequence has an entry, 0 where it was padded. The model must attend to the new entry itself.
   * @default no mask
   */
  maskKey?: string;
  /**
   * The mask's dtype.
   * @default 'int64'
   */
  maskType?: TensorType;
  /**
   * Builds the step's tensors and each sequence's state tensors.
   * @default a tensor of the class of the state tensor it is made from (onnxruntime's `Tensor` in, `Tensor` out), else `{ type, data, dims }`
   */
  tensor?: TensorFactory;
}

/** What {@link DecoderBatcher.merge} hands to `split`: each sequence's cache length and the padded one. */
export interface DecoderContext {
  readonly lengths: readonly number[];
  readonly padded: number;
}

const KEYS = ['token', 'tokenType', 'logits', 'state', 'cache', 'maskKey', 'maskType', 'tensor'];

/**
 * The batcher of an ONNX decoder step for a `GenerationHost`: builds the step's feeds from the
 * running sequences (their tokens, their fixed-size states concatenated, their growing caches
 * left-padded with a mask) and cuts the outputs back into each sequence's logits and next state.
 * A user writes no tensor plumbing for these layouts: the step function is `session.run`.
 *
 * @example
 * ```ts
 * const host = new GenerationHost((feeds: OnnxFeeds) => session.run(feeds), {
 *   maxBatchSize: 16,
 *   batcher: new DecoderBatcher({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor }),
 *   initialState: () => ({ state: new Tensor('float32', new Float32Array(HIDDEN), [1, HIDDEN]) }),
 * });
 * ```
 */
export class DecoderBatcher<T extends TensorLike = TensorLike>
  implements Batcher<StepInput<DecoderState<T>>, StepOutput<DecoderState<T>>, Record<string, T>, Readonly<Record<string, TensorLike>>, DecoderContext>
{
  readonly #o: Required<Pick<DecoderBatcherOptions, 'token' | 'tokenType' | 'logits' | 'maskType'>> & Pick<DecoderBatcherOptions, 'maskKey'>;
  readonly #state: ReadonlyArray<readonly [string, string]>;
  readonly #cache: ReadonlyArray<readonly [string, string]>;
  readonly #tensor: (sample: unknown, type: string, data: TensorData, dims: readonly number[]) => TensorLike;

  constructor(options: DecoderBatcherOptions) {
    const where = 'DecoderBatcher';
    if (typeof options !== 'object' || options === null) fail(where, 'options', 'an object { token, logits, state?, cache? }', options);
    rejectUnknownKeys(where, options, KEYS);
    for (const key of ['token', 'logits'] as const) if (typeof options[key] !== 'string' || options[key] === '') fail(where, key, 'an input or output name (a non-empty string)', options[key]);
    if (options.maskKey !== undefined && (typeof options.maskKey !== 'string' || options.maskKey === '')) fail(where, 'maskKey', 'an input name (a non-empty string)', options.maskKey);
    const tokenType = options.tokenType ?? 'int64';
    if (tokenType !== 'int64' && tokenType !== 'int32') fail(where, 'tokenType', "'int64' or 'int32'", tokenType);
    const maskType = options.maskType ?? 'int64';
    if (!isTensorType(maskType) || maskType === 'string') fail(where, 'maskType', 'a numeric tensor type', maskType);
    const pairs = (key: 'state' | 'cache'): Array<[string, string]> => {
      const v = options[key];
      if (v === undefined) return [];
      if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(where, key, 'an object { inputName: outputName }', v);
      const entries = Object.entries(v);
      for (const [input, output] of entries) if (typeof output !== 'string' || output === '') fail(where, `${key}.${input}`, 'an output name (a non-empty string)', output);
      return entries;
    };
    this.#state = pairs('state');
    this.#cache = pairs('cache');
    if (this.#state.length === 0 && this.#cache.length === 0) throw new TypeError(`${where}: expected \`state\` or \`cache\` to name at least one input, got neither (a decoder without state needs no DecoderBatcher)`);
    if (options.maskKey !== undefined && this.#cache.length === 0) throw new TypeError(`${where}: \`maskKey\` masks the padding of a growing \`cache\`, but no \`cache\` is given`);
    this.#o = { token: options.token, tokenType, logits: options.logits, maskType, maskKey: options.maskKey };
    this.#tensor = tensorBuilder(options.tensor, where);
  }

  merge(items: ReadonlyArray<StepInput<DecoderState<T>>>): Merged<Record<string, T>, DecoderContext> {
    const n = items.length;
    const feeds: Record<string, TensorLike> = {};
    const firstState = items[0]?.state;
    const sample = firstState === undefined ? undefined : Object.values(firstState)[0];
    const tokens = this.#o.tokenType === 'int64' ? BigInt64Array.from(items, (s) => BigInt(s.token)) : Int32Array.from(items, (s) => s.token);
    feeds[this.#o.token] = this.#tensor(sample, this.#o.tokenType, tokens, [n]);

    for (const [input] of this.#state) {
      const blocks = items.map((s, i) => this.#stateTensor(s.state, input, i, 1));
      const first = blocks[0] as TensorLike;
      for (const [i, b] of blocks.entries()) {
        if (b.type !== first.type || formatShape(b.dims.slice(1)) !== formatShape(first.dims.slice(1))) {
          throw new TypeError(`DecoderBatcher: state "${input}" of sequence ${i} is ${b.type}${formatShape(b.dims)}, but sequence 0's is ${first.type}${formatShape(first.dims)}; fixed-size state must agree`);
        }
      }
      const { data, dims } = concatInto(first.type as TensorType, blocks, 0);
      feeds[input] = this.#tensor(first, first.type, data, dims);
    }

    const lengths = items.map((s, i) => this.#cacheLength(s.state, i));
    const padded = Math.max(0, ...lengths);
    for (const [input] of this.#cache) {
      const blocks = items.map((s, i) => this.#stateTensor(s.state, input, i, 2));
      const first = blocks[0] as TensorLike;
      const inner = first.dims.slice(2);
      const dims = [n, padded, ...inner];
      const data = allocate(first.type as TensorType, sizeOf(dims), first.data);
      blocks.forEach((b, i) => {
        if (b.type !== first.type || formatShape(b.dims.slice(2)) !== formatShape(inner)) {
          throw new TypeError(`DecoderBatcher: cache "${input}" of sequence ${i} is ${b.type}${formatShape(b.dims)}, but sequence 0's is ${first.type}${formatShape(first.dims)}; entries must agree`);
        }
        const t = lengths[i] as number;
        copyRegion(b.data, b.dims, b.dims.map(() => 0), data, dims, [i, padded - t, ...inner.map(() => 0)], b.dims);
      });
      feeds[input] = this.#tensor(first, first.type, data, dims);
    }
    if (this.#o.maskKey !== undefined) {
      const type = this.#o.maskType;
      const mask = allocate(type, n * padded);
      const one = DTYPES[type].bigint ? 1n : 1;
      lengths.forEach((t, i) => (mask as { fill(v: unknown, start: number, end: number): void }).fill(one, i * padded + padded - t, (i + 1) * padded));
      feeds[this.#o.maskKey] = this.#tensor(sample, type, mask, [n, padded]);
    }
    return { batch: feeds as Record<string, T>, ctx: { lengths, padded }, padding: padded === 0 ? 0 : 1 - lengths.reduce((a, b) => a + b, 0) / (n * padded) };
  }

  split(output: Readonly<Record<string, TensorLike>>, ctx: DecoderContext): ReadonlyArray<StepOutput<DecoderState<T>> | Error> {
    const n = ctx.lengths.length;
    const logits = this.#output(output, this.#o.logits, n);
    const vocab = sizeOf(logits.dims.slice(1));
    const states: Array<Record<string, TensorLike>> = Array.from({ length: n }, () => ({}));
    for (const [input, name] of this.#state) {
      const out = this.#output(output, name, n);
      const dims = [1, ...out.dims.slice(1)];
      const size = sizeOf(dims);
      for (let i = 0; i < n; i++) {
        const data = allocate(out.type as TensorType, size, out.data);
        copyRegion(out.data, out.dims, out.dims.map((_, a) => (a === 0 ? i : 0)), data, dims, dims.map(() => 0), dims);
        (states[i] as Record<string, TensorLike>)[input] = this.#tensor(out, out.type, data, dims);
      }
    }
    for (const [input, name] of this.#cache) {
      const out = this.#output(output, name, n);
      if (out.dims[1] !== ctx.padded + 1) {
        throw new TypeError(`DecoderBatcher: output "${name}" should have ${ctx.padded + 1} entries on axis 1 (the ${ctx.padded} of the padded past plus the new one), got ${formatShape(out.dims)}`);
      }
      const inner = out.dims.slice(2);
      for (let i = 0; i < n; i++) {
        const keep = (ctx.lengths[i] as number) + 1;
        const dims = [1, keep, ...inner];
        const data = allocate(out.type as TensorType, sizeOf(dims), out.data);
        copyRegion(out.data, out.dims, [i, ctx.padded + 1 - keep, ...inner.map(() => 0)], data, dims, dims.map(() => 0), dims);
        (states[i] as Record<string, TensorLike>)[input] = this.#tensor(out, out.type, data, dims);
      }
    }
    const data = logits.data as ArrayLike<number> & { slice(start: number, end: number): ArrayLike<number> };
    return states.map((state, i) => ({ logits: data.slice(i * vocab, (i + 1) * vocab), state: state as DecoderState<T> }));
  }

  /** A sequence's tensor for `input`, checked: a tensor with one row and at least `rank` axes. */
  #stateTensor(state: DecoderState<T>, input: string, sequence: number, rank: number): TensorLike {
    const t = (state as Record<string, unknown> | undefined)?.[input];
    const fault = tensorFault(t);
    if (fault !== null) throw new TypeError(`DecoderBatcher: the state of sequence ${sequence} should hold a tensor "${input}" (${fault.expected}), got ${t === undefined ? 'none' : fault.actual}`);
    const tensor = t as TensorLike;
    if (tensor.dims.length < rank || tensor.dims[0] !== 1) {
      throw new TypeError(`DecoderBatcher: state "${input}" of sequence ${sequence} should be [1, ...] with ${rank} axes at least (one sequence's row), got ${formatShape(tensor.dims)}`);
    }
    return tensor;
  }

  /** A sequence's cache length `t` (axis 1 of its cache tensors, which must agree). */
  #cacheLength(state: DecoderState<T>, sequence: number): number {
    let length: number | undefined;
    for (const [input] of this.#cache) {
      const t = this.#stateTensor(state, input, sequence, 2).dims[1] as number;
      if (length !== undefined && t !== length) throw new TypeError(`DecoderBatcher: the cache tensors of sequence ${sequence} disagree on their length (axis 1): ${length} and ${t} ("${input}")`);
      length = t;
    }
    return length ?? 0;
  }

  #output(output: Readonly<Record<string, TensorLike>>, name: string, rows: number): TensorLike {
    const t = (output as Record<string, TensorLike | undefined>)[name];
    if (t === undefined) {
      throw new TypeError(`DecoderBatcher: the step's output has no "${name}"; it has ${Object.keys(output ?? {}).map((k) => `"${k}"`).join(', ') || describe(output)}`);
    }
    if (t.dims[0] !== rows) throw new TypeError(`DecoderBatcher: output "${name}" should have ${rows} rows (one per sequence), got ${formatShape(t.dims)}`);
    return t;
  }
}
