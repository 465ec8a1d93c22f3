import { InferenceSession, Tensor } from 'onnxruntime-node';
import { greedy, kvDecoderModel, kvDecoderReference, recurrentDecoderModel, recurrentDecoderReference } from '../../examples/support/decoder-models';

const H = 8;
const D = 8;
const STEPS = 12;

const f32 = (data: Float32Array, dims: number[]): Tensor => new Tensor('float32', data, dims);
const i64 = (tokens: number[]): Tensor => new Tensor('int64', BigInt64Array.from(tokens, (t) => BigInt(t)), [tokens.length]);

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-4): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(Math.abs((actual[i] as number) - (expected[i] as number))).toBeLessThanOrEqual(tolerance);
}

/** Row `r` of a `[N, width]` tensor's data. */
const row = (data: Float32Array, r: number, width: number): Float32Array => data.slice(r * width, (r + 1) * width);

const create = (bytes: Uint8Array): Promise<InferenceSession> => InferenceSession.create(bytes, { intraOpNumThreads: 1 });

describe('recurrentDecoderModel', () => {
  let session: InferenceSession;
  beforeAll(async () => {
    session = await create(recurrentDecoderModel());
  });
  afterAll(() => session.release());

  /** Greedy decoding of several sequences in one batch; returns each row's generated tokens. */
  async function decodeBatch(starts: number[]): Promise<number[][]> {
    const n = starts.length;
    let tokens = [...starts];
    let state: Float32Array = new Float32Array(n * H);
    const out: number[][] = starts.map(() => []);
    for (let s = 0; s < STEPS; s++) {
      const r = await session.run({ token: i64(tokens), state: f32(state, [n, H]) });
      const logits = r.logits!.data as Float32Array;
      state = r.next_state!.data as Float32Array;
      tokens = tokens.map((_, i) => greedy(row(logits, i, logits.length / n)));
      tokens.forEach((t, i) => out[i]!.push(t));
    }
    return out;
  }

  const starts = [0, 5, 11];

  test('one sequence at a time matches the JS reference, and decoding does not collapse', async () => {
    const reference = recurrentDecoderReference();
    for (const start of starts) {
      let token = start;
      let state: Float32Array = new Float32Array(H);
      const generated: number[] = [];
      for (let s = 0; s < STEPS; s++) {
        const r = await session.run({ token: i64([token]), state: f32(state, [1, H]) });
        const expected = reference.step(token, state);
        expectClose(r.logits!.data as Float32Array, expected.logits);
        expectClose(r.next_state!.data as Float32Array, expected.state);
        token = greedy(r.logits!.data as Float32Array);
        expect(token).toBe(greedy(expected.logits));
        state = r.next_state!.data as Float32Array;
        generated.push(token);
      }
      expect(new Set(generated).size).toBeGreaterThan(1);
    }
  });

  test('a batch of three decodes each row as it decodes alone', async () => {
    const together = await decodeBatch(starts);
    for (let i = 0; i < starts.length; i++) expect(together[i]).toEqual((await decodeBatch([starts[i]!]))[0]);
  });
});

describe('kvDecoderModel', () => {
  let session: InferenceSession;
  beforeAll(async () => {
    session = await create(kvDecoderModel());
  });
  afterAll(() => session.release());

  /** One sequence's state: its real (unpadded) cache entries, next input token, and output so far. */
  interface Seq {
    token: number;
    keys: Float32Array[];
    values: Float32Array[];
    generated: number[];
    logits: Float32Array[];
  }
  const newSeq = (token: number): Seq => ({ token, keys: [], values: [], generated: [], logits: [] });

  /** Runs one step for `seqs` in one batch: caches left-padded to the longest, mask 0 on padding. */
  async function step(seqs: Seq[]): Promise<void> {
    const n = seqs.length;
    const T = Math.max(...seqs.map((q) => q.keys.length));
    const pastKey = new Float32Array(n * T * D);
    const pastValue = new Float32Array(n * T * D);
    const mask = new Float32Array(n * T);
    seqs.forEach((q, i) => {
      const pad = T - q.keys.length;
      q.keys.forEach((k, t) => pastKey.set(k, (i * T + pad + t) * D));
      q.values.forEach((v, t) => pastValue.set(v, (i * T + pad + t) * D));
      mask.fill(1, i * T + pad, (i + 1) * T);
    });
    const r = await session.run({
      token: i64(seqs.map((q) => q.token)),
      past_key: f32(pastKey, [n, T, D]),
      past_value: f32(pastValue, [n, T, D]),
      mask: f32(mask, [n, T]),
    });
    const logits = r.logits!.data as Float32Array;
    const presentKey = r.present_key!.data as Float32Array;
    const presentValue = r.present_value!.data as Float32Array;
    expect(r.present_key!.dims).toEqual([n, T + 1, D]);
    seqs.forEach((q, i) => {
      // The new entry sits at position T of every row; the padding before it is dropped.
      q.keys.push(row(presentKey, i * (T + 1) + T, D));
      q.values.push(row(presentValue, i * (T + 1) + T, D));
      const l = row(logits, i, logits.length / n);
      q.logits.push(l);
      q.token = greedy(l);
      q.generated.push(q.token);
    });
  }

  async function decodeAlone(start: number, steps: number): Promise<Seq> {
    const q = newSeq(start);
    for (let s = 0; s < steps; s++) await step([q]);
    return q;
  }

  test('one sequence with a growing cache (empty at the first step) matches the JS reference', async () => {
    const reference = kvDecoderReference();
    const q = newSeq(3);
    const keys: Float32Array[] = [];
    const values: Float32Array[] = [];
    for (let s = 0; s < 10; s++) {
      const token = q.token;
      await step([q]);
      const expected = reference.step(token, keys, values);
      expectClose(q.logits.at(-1)!, expected.logits);
      expectClose(q.keys.at(-1)!, expected.key);
      expectClose(q.values.at(-1)!, expected.value);
      expect(q.token).toBe(greedy(expected.logits));
      keys.push(expected.key);
      values.push(expected.value);
    }
    expect(new Set(q.generated).size).toBeGreaterThan(1);
  });

  test('sequences that join at different steps, left-padded and masked, decode as they do alone', async () => {
    const plan = [
      { start: 1, joinAt: 0 },
      { start: 7, joinAt: 3 },
      { start: 12, joinAt: 6 },
    ];
    const seqs = plan.map((p) => newSeq(p.start));
    for (let s = 0; s < STEPS; s++) await step(seqs.filter((_, i) => plan[i]!.joinAt <= s));
    for (let i = 0; i < plan.length; i++) {
      const alone = await decodeAlone(plan[i]!.start, STEPS - plan[i]!.joinAt);
      expect(seqs[i]!.generated).toEqual(alone.generated);
      seqs[i]!.logits.forEach((l, s) => expectClose(l, alone.logits[s]!));
    }
  });
});
