/**
 * Two tiny autoregressive decoders, generated in code like the models in ./models.ts, for examples
 * and tests of step-by-step generation: one carries a fixed-size recurrent state, the other a
 * key/value cache that grows by one entry per step. Each has an exact JS reference, so a test can
 * check that batching sequences together (and padding the shorter ones) changes nothing.
 */
import { onnx } from 'onnx-proto';
import { encodeModel, floatInit, int64Init, seeded, valueInfo } from './models';

const { DataType } = onnx.TensorProto;
const { AttributeType } = onnx.AttributeProto;

/** `a [rows, inner] · b [inner, cols]` for one row `a`, accumulated in float64, stored as float32. */
function rowTimes(a: ArrayLike<number>, b: Float32Array, cols: number): Float32Array {
  const out = new Float32Array(cols);
  for (let j = 0; j < cols; j++) {
    let acc = 0;
    for (let i = 0; i < a.length; i++) acc += (a[i] as number) * (b[i * cols + j] as number);
    out[j] = acc;
  }
  return out;
}

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let acc = 0;
  for (let i = 0; i < a.length; i++) acc += (a[i] as number) * (b[i] as number);
  return acc;
}

/** Options of {@link recurrentDecoderModel}; the same options give the same weights. */
export interface RecurrentDecoderOptions {
  vocab?: number;
  hidden?: number;
  seed?: number;
}

/** The weights, shared by the model and its reference so the two cannot drift apart. */
function recurrentWeights(options: RecurrentDecoderOptions) {
  const { vocab = 16, hidden = 8, seed = 5 } = options;
  const scale = (w: Float32Array, k: number): Float32Array => w.map((v) => v * k);
  return {
    vocab,
    hidden,
    // Wh above 1/sqrt(H) keeps the state moving, so greedy decoding does not settle on one token.
    E: seeded(vocab * hidden, seed),
    Wx: scale(seeded(hidden * hidden, seed + 1), 1 / Math.sqrt(hidden)),
    Wh: scale(seeded(hidden * hidden, seed + 2), 1.5 / Math.sqrt(hidden)),
    b: scale(seeded(hidden, seed + 3), 0.1),
    Wo: scale(seeded(hidden * vocab, seed + 4), 2 / Math.sqrt(hidden)),
    bo: scale(seeded(vocab, seed + 5), 0.1),
  };
}

/**
 * A recurrent decoder step (an Elman RNN with an embedding and a vocabulary head).
 * Inputs: `token [N]` int64, `state [N, H]` float32 (zeros for a new sequence).
 * Outputs: `logits [N, V]` float32, `next_state [N, H]` float32, fed back as `state` next step.
 * Rows never interact, so any set of sequences can share a batch at any step.
 */
export function recurrentDecoderModel(options: RecurrentDecoderOptions = {}): Uint8Array {
  const w = recurrentWeights(options);
  const { vocab: V, hidden: H } = w;
  return encodeModel({
    name: 'recurrent-decoder',
    node: [
      { opType: 'Gather', input: ['E', 'token'], output: ['emb'] },
      { opType: 'MatMul', input: ['emb', 'Wx'], output: ['xw'] },
      { opType: 'MatMul', input: ['state', 'Wh'], output: ['hw'] },
      { opType: 'Add', input: ['xw', 'hw'], output: ['pre0'] },
      { opType: 'Add', input: ['pre0', 'b'], output: ['pre'] },
      { opType: 'Tanh', input: ['pre'], output: ['next_state'] },
      { opType: 'MatMul', input: ['next_state', 'Wo'], output: ['lo'] },
      { opType: 'Add', input: ['lo', 'bo'], output: ['logits'] },
    ],
    initializer: [
      floatInit('E', [V, H], w.E),
      floatInit('Wx', [H, H], w.Wx),
      floatInit('Wh', [H, H], w.Wh),
      floatInit('b', [H], w.b),
      floatInit('Wo', [H, V], w.Wo),
      floatInit('bo', [V], w.bo),
    ],
    input: [valueInfo('token', DataType.INT64, ['N']), valueInfo('state', DataType.FLOAT, ['N', H])],
    output: [valueInfo('logits', DataType.FLOAT, ['N', V]), valueInfo('next_state', DataType.FLOAT, ['N', H])],
  });
}

/** One step of {@link recurrentDecoderModel} for one sequence: `state [H]` in, `logits [V]` and the next `state [H]` out. */
export function recurrentDecoderReference(options: RecurrentDecoderOptions = {}): {
  step(token: number, state: Float32Array): { logits: Float32Array; state: Float32Array };
} {
  const w = recurrentWeights(options);
  const { vocab: V, hidden: H } = w;
  return {
    step(token, state) {
      const emb = w.E.subarray(token * H, (token + 1) * H);
      const xw = rowTimes(emb, w.Wx, H);
      const hw = rowTimes(state, w.Wh, H);
      const next = new Float32Array(H);
      for (let j = 0; j < H; j++) next[j] = Math.tanh((xw[j] as number) + (hw[j] as number) + (w.b[j] as number));
      const logits = rowTimes(next, w.Wo, V);
      for (let j = 0; j < V; j++) logits[j] = (logits[j] as number) + (w.bo[j] as number);
      return { logits, state: next };
    },
  };
}

/** Options of {@link kvDecoderModel}; the same options give the same weights. */
export interface KvDecoderOptions {
  vocab?: number;
  dim?: number;
  seed?: number;
}

function kvWeights(options: KvDecoderOptions) {
  const { vocab = 16, dim = 8, seed = 9 } = options;
  const scale = (w: Float32Array, k: number): Float32Array => w.map((v) => v * k);
  const s = 1 / Math.sqrt(dim);
  return {
    vocab,
    dim,
    E: seeded(vocab * dim, seed),
    // Queries and keys scaled up so attention is not near-uniform: the cache must matter.
    Wq: scale(seeded(dim * dim, seed + 1), 2 * s),
    Wk: scale(seeded(dim * dim, seed + 2), 2 * s),
    Wv: scale(seeded(dim * dim, seed + 3), s),
    Wo: scale(seeded(dim * vocab, seed + 4), 2 * s),
    bo: scale(seeded(vocab, seed + 5), 0.1),
  };
}

/**
 * A single-head attention decoder step with a key/value cache that grows by one entry per step.
 * Inputs: `token [N]` int64, `past_key [N, T, D]` and `past_value [N, T, D]` float32,
 * `mask [N, T]` float32 over the past. Outputs: `logits [N, V]`, `present_key [N, T1, D]` and
 * `present_value [N, T1, D]` (the past with the new token's entry appended at position T), which
 * become the next step's past.
 *
 * Caches are left-padded so that sequences of different lengths share a batch: a shorter sequence
 * has zero rows at the start of its time axis and mask 0 there; mask is 1 on its real entries, and
 * the new entry (position T of the present) is always attended. A masked slot's score drops by
 * 1e9, so its softmax weight is exactly 0 in float32 and padding changes a row's result only by
 * float rounding. The first step
 * of a batch takes an empty cache: T = 0, past tensors of dims `[N, 0, D]`, mask `[N, 0]`.
 */
export function kvDecoderModel(options: KvDecoderOptions = {}): Uint8Array {
  const w = kvWeights(options);
  const { vocab: V, dim: D } = w;
  const axis = (a: number): onnx.IAttributeProto => ({ name: 'axis', i: a, type: AttributeType.INT });
  return encodeModel({
    name: 'kv-decoder',
    node: [
      { opType: 'Gather', input: ['E', 'token'], output: ['x'] },
      { opType: 'MatMul', input: ['x', 'Wq'], output: ['q'] },
      { opType: 'MatMul', input: ['x', 'Wk'], output: ['k'] },
      { opType: 'MatMul', input: ['x', 'Wv'], output: ['v'] },
      { opType: 'Unsqueeze', input: ['k', 'axes1'], output: ['k1'] },
      { opType: 'Unsqueeze', input: ['v', 'axes1'], output: ['v1'] },
      { opType: 'Concat', input: ['past_key', 'k1'], output: ['present_key'], attribute: [axis(1)] },
      { opType: 'Concat', input: ['past_value', 'v1'], output: ['present_value'], attribute: [axis(1)] },
      { opType: 'Unsqueeze', input: ['q', 'axes2'], output: ['q2'] },
      { opType: 'MatMul', input: ['present_key', 'q2'], output: ['s3'] },
      { opType: 'Squeeze', input: ['s3', 'axes2'], output: ['s'] },
      { opType: 'Mul', input: ['s', 'inv_sqrt_d'], output: ['scaled'] },
      // The mask covers the past only; the new entry is always attended (its penalty column is 0).
      { opType: 'Sub', input: ['mask', 'one'], output: ['mask_m1'] },
      { opType: 'Mul', input: ['mask_m1', 'big'], output: ['penalty_past'] },
      { opType: 'Slice', input: ['scaled', 'last_start', 'last_end', 'axes1'], output: ['last_score'] },
      { opType: 'Mul', input: ['last_score', 'zero'], output: ['penalty_new'] },
      { opType: 'Concat', input: ['penalty_past', 'penalty_new'], output: ['penalty'], attribute: [axis(1)] },
      { opType: 'Add', input: ['scaled', 'penalty'], output: ['masked'] },
      { opType: 'Softmax', input: ['masked'], output: ['p'], attribute: [axis(-1)] },
      { opType: 'Unsqueeze', input: ['p', 'axes1'], output: ['p1'] },
      { opType: 'MatMul', input: ['p1', 'present_value'], output: ['c3'] },
      { opType: 'Squeeze', input: ['c3', 'axes1'], output: ['ctx'] },
      { opType: 'Add', input: ['ctx', 'x'], output: ['h'] },
      { opType: 'MatMul', input: ['h', 'Wo'], output: ['lo'] },
      { opType: 'Add', input: ['lo', 'bo'], output: ['logits'] },
    ],
    initializer: [
      floatInit('E', [V, D], w.E),
      floatInit('Wq', [D, D], w.Wq),
      floatInit('Wk', [D, D], w.Wk),
      floatInit('Wv', [D, D], w.Wv),
      floatInit('Wo', [D, V], w.Wo),
      floatInit('bo', [V], w.bo),
      floatInit('inv_sqrt_d', [], [1 / Math.sqrt(D)]),
      floatInit('one', [], [1]),
      floatInit('zero', [], [0]),
      int64Init('last_start', [1], [-1]),
      int64Init('last_end', [1], [2 ** 62]),
      floatInit('big', [], [1e9]),
      int64Init('axes1', [1], [1]),
      int64Init('axes2', [1], [2]),
    ],
    input: [
      valueInfo('token', DataType.INT64, ['N']),
      valueInfo('past_key', DataType.FLOAT, ['N', 'T', D]),
      valueInfo('past_value', DataType.FLOAT, ['N', 'T', D]),
      valueInfo('mask', DataType.FLOAT, ['N', 'T']),
    ],
    output: [
      valueInfo('logits', DataType.FLOAT, ['N', V]),
      valueInfo('present_key', DataType.FLOAT, ['N', 'T1', D]),
      valueInfo('present_value', DataType.FLOAT, ['N', 'T1', D]),
    ],
  });
}

/**
 * One step of {@link kvDecoderModel} for one sequence. `keys` and `values` are its real past
 * entries (`[D]` each, no padding, oldest first); returns `logits [V]` and the new entry's
 * `key [D]` and `value [D]`, which the caller appends.
 */
export function kvDecoderReference(options: KvDecoderOptions = {}): {
  step(token: number, keys: Float32Array[], values: Float32Array[]): { logits: Float32Array; key: Float32Array; value: Float32Array };
} {
  const w = kvWeights(options);
  const { vocab: V, dim: D } = w;
  return {
    step(token, keys, values) {
      const x = w.E.subarray(token * D, (token + 1) * D);
      const q = rowTimes(x, w.Wq, D);
      const key = rowTimes(x, w.Wk, D);
      const value = rowTimes(x, w.Wv, D);
      const allKeys = [...keys, key];
      const allValues = [...values, value];
      const scores = allKeys.map((k) => dot(k, q) / Math.sqrt(D));
      const max = Math.max(...scores);
      const exps = scores.map((s) => Math.exp(s - max));
      const total = exps.reduce((a, b) => a + b, 0);
      const h = Float64Array.from(x);
      allValues.forEach((v, t) => {
        for (let j = 0; j < D; j++) h[j] = (h[j] as number) + ((exps[t] as number) / total) * (v[j] as number);
      });
      const logits = rowTimes(h, w.Wo, V);
      for (let j = 0; j < V; j++) logits[j] = (logits[j] as number) + (w.bo[j] as number);
      return { logits, key, value };
    },
  };
}

/** Greedy decoding's choice: the index of the largest logit, the lowest index on ties. */
export function greedy(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if ((logits[i] as number) > (logits[best] as number)) best = i;
  return best;
}
