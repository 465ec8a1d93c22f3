import { InferenceSession, Tensor } from 'onnxruntime-node';
import { GenerationHost } from '../../src/generate/generation-host';
import { DecoderBatcher, type DecoderState } from '../../src/generate/decoder-batcher';
import type { StepEvent } from '../../src/generate/events';
import { kvDecoderModel, recurrentDecoderModel } from '../../examples/support/decoder-models';
import { kvAlone, recurrentAlone } from '../support/greedy-alone';

// Continuous batching on real onnxruntime sessions of the two generated decoders: callers whose
// prompts and lengths differ, arriving at different times, each get exactly the tokens that
// greedy decoding of their prompt alone gives (the JS reference decodes alone, in float64).

const H = 8;
const D = 8;
const tensor = (type: string, data: unknown, dims: readonly number[]): Tensor => new Tensor(type as Tensor.Type, data as Tensor.DataType, dims);

/** Callers arriving over time (a few per event-loop turn), each with its own prompt and length. */
const CALLERS = Array.from({ length: 14 }, (_, i) => ({
  prompt: Array.from({ length: 1 + (i % 4) }, (_, k) => (i * 5 + k * 3) % 16),
  maxTokens: 3 + ((i * 7) % 13),
  delayTurns: i % 5,
}));

async function runCallers(host: GenerationHost<DecoderState<Tensor>, Record<string, Tensor>, Readonly<Record<string, Tensor>>>): Promise<number[][]> {
  return Promise.all(
    CALLERS.map(async (c) => {
      for (let t = 0; t < c.delayTurns; t++) await new Promise((r) => setImmediate(r));
      return host.generate(c.prompt, { maxTokens: c.maxTokens }).collect();
    }),
  );
}

test('a recurrent decoder (fixed-size state, concatenated): every caller gets what greedy decoding alone gives, in steps shared across callers', async () => {
  const session = await InferenceSession.create(recurrentDecoderModel(), { intraOpNumThreads: 1 });
  const steps: StepEvent[] = [];
  const host = new GenerationHost<DecoderState<Tensor>, Record<string, Tensor>, Readonly<Record<string, Tensor>>>((feeds) => session.run(feeds), {
    maxBatchSize: 6,
    batcher: new DecoderBatcher<Tensor>({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor }),
    initialState: () => ({ state: new Tensor('float32', new Float32Array(H), [1, H]) }),
    observer: { onStep: (e) => steps.push(e) },
  });
  try {
    const got = await runCallers(host);
    expect(got).toEqual(CALLERS.map((c) => recurrentAlone(c.prompt, c.maxTokens)));
    expect(Math.max(...steps.map((e) => e.sequences))).toBe(6); // slots were shared
    expect(steps.some((e) => e.joined > 0 && e.sequences > e.joined)).toBe(true); // someone joined a running batch
    expect(host.stats.tokens).toBe(CALLERS.reduce((a, c) => a + c.maxTokens, 0));
  } finally {
    await host.stop();
    await session.release();
  }
});

test('a decoder with a growing key/value cache (left-padded, masked): every caller gets what greedy decoding alone gives', async () => {
  const session = await InferenceSession.create(kvDecoderModel(), { intraOpNumThreads: 1 });
  const steps: StepEvent[] = [];
  const host = new GenerationHost<DecoderState<Tensor>, Record<string, Tensor>, Readonly<Record<string, Tensor>>>((feeds) => session.run(feeds), {
    maxBatchSize: 5,
    batcher: new DecoderBatcher<Tensor>({
      token: 'token',
      logits: 'logits',
      cache: { past_key: 'present_key', past_value: 'present_value' },
      maskKey: 'mask',
      maskType: 'float32',
      tensor,
    }),
    initialState: () => ({ past_key: new Tensor('float32', new Float32Array(0), [1, 0, D]), past_value: new Tensor('float32', new Float32Array(0), [1, 0, D]) }),
    observer: { onStep: (e) => steps.push(e) },
  });
  try {
    const got = await runCallers(host);
    expect(got).toEqual(CALLERS.map((c) => kvAlone(c.prompt, c.maxTokens)));
    expect(steps.some((e) => e.joined > 0 && e.sequences > e.joined)).toBe(true);
  } finally {
    await host.stop();
    await session.release();
  }
});

test('a prefill function that reads each prompt whole: the tokens are still those of greedy decoding alone, and decode steps see no prompt token', async () => {
  const session = await InferenceSession.create(recurrentDecoderModel(), { intraOpNumThreads: 1 });
  const positions: number[] = [];
  const host = new GenerationHost<DecoderState<Tensor>, Record<string, Tensor>, Readonly<Record<string, Tensor>>>(
    (feeds) => session.run(feeds),
    {
      maxBatchSize: 6,
      batcher: new DecoderBatcher<Tensor>({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor }),
      initialState: () => ({ state: new Tensor('float32', new Float32Array(H), [1, H]) }),
      // Reads a prompt in one go (here: its tokens through the same graph, one sequence at a time).
      prefill: async (prompts) =>
        Promise.all(
          prompts.map(async ({ prompt, state }) => {
            let h = state.state as Tensor;
            let logits: Float32Array = new Float32Array();
            for (const t of prompt) {
              const r = await session.run({ token: new Tensor('int64', BigInt64Array.from([BigInt(t)]), [1]), state: h });
              h = r.next_state as Tensor;
              logits = r.logits!.data as Float32Array;
            }
            return { logits, state: { state: h } };
          }),
        ),
      observer: { onStep: (e) => void (e.prefill || positions.push(e.prefilling)) },
    },
  );
  try {
    const got = await runCallers(host);
    expect(got).toEqual(CALLERS.map((c) => recurrentAlone(c.prompt, c.maxTokens)));
    expect(positions.every((p) => p === 0)).toBe(true); // no decode step read a prompt token
  } finally {
    await host.stop();
    await session.release();
  }
});
