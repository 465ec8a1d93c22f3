/**
 * Continuous batching for a generative model: callers arrive at different times, each gets its
 * tokens streamed as soon as its step finishes, and every step runs the sequences still going.
 * The decoder is a small recurrent one generated in code (./support/decoder-models.ts); with
 * yours, load the model file instead. Run: npx ts-node examples/generation.ts
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { DecoderBatcher, GenerationHost } from 'microbatch';
import { recurrentDecoderModel } from './support/decoder-models';

const HIDDEN = 8;
const tensor = (type: string, data: unknown, dims: readonly number[]): Tensor => new Tensor(type as Tensor.Type, data as Tensor.DataType, dims);

async function main(): Promise<void> {
  // token [N] int64, state [N, 8] → logits [N, 16], next_state [N, 8]
  const session = await InferenceSession.create(recurrentDecoderModel(), { intraOpNumThreads: 1 });
  const sizes: number[] = [];
  const host = new GenerationHost((feeds: Record<string, Tensor>) => session.run(feeds), {
    maxBatchSize: 4,
    batcher: new DecoderBatcher<Tensor>({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor }),
    initialState: () => ({ state: new Tensor('float32', new Float32Array(HIDDEN), [1, HIDDEN]) }),
    observer: {
      onStep: (e) => sizes.push(e.sequences),
      onSequence: (e) => console.log(`  ${e.outcome}: ${e.tokens} tokens after a ${e.promptTokens}-token prompt`),
    },
  });

  const callers = [
    { name: 'a', prompt: [5], maxTokens: 6, joinsAfterSteps: 0 },
    { name: 'b', prompt: [11, 2], maxTokens: 3, joinsAfterSteps: 0 },
    { name: 'c', prompt: [7], maxTokens: 8, joinsAfterSteps: 2 },
  ];
  const lines = await Promise.all(
    callers.map(async (c) => {
      while (sizes.length < c.joinsAfterSteps) await new Promise((r) => setImmediate(r)); // arrives later
      const tokens: number[] = [];
      for await (const token of host.generate(c.prompt, { maxTokens: c.maxTokens })) tokens.push(token);
      return `${c.name} [${c.prompt.join(', ')}] → ${tokens.join(' ')}`;
    }),
  );
  console.log(lines.join('\n'));
  console.log(`sequences per step: ${sizes.join(', ')}`);
  const stats = host.stats;
  console.log(`${stats.tokens} tokens in ${stats.steps} steps (one at a time would take ${stats.rows})`);

  // A caller that leaves early frees its row at the next step.
  const stream = host.generate([3]);
  for await (const token of stream) if (token >= 0) break;
  console.log(`left after one token: ${stream.finishReason}`);
  await host.stop();
  await session.release();
}

void main();
