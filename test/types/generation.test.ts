/**
 * Type-level tests of generation: checked by `tsc` (run before jest in `npm test`). The runtime
 * assertions only make jest count the file.
 */
import 'reflect-metadata';
import { expectTypeOf } from 'expect-type';
import { asGenerating, type GenerationStats } from '../../src/api/generate';
import {
  createGenerationHost,
  DecoderBatcher,
  generating,
  GenerationHost,
  GenerationProxy,
  type TokenStream,
  type DecoderState,
  type StepInput,
  type StepOutput,
  type TensorLike,
} from '../../src';

test('generate() returns a TokenStream of token ids in every style; the step and its state are typed', async () => {
  const host = new GenerationHost(async (steps: readonly StepInput<Float32Array>[]) => steps.map((s) => ({ token: s.token, state: s.state })), {
    maxBatchSize: 4,
    initialState: () => new Float32Array(2),
  });
  expectTypeOf(host.generate([1])).toEqualTypeOf<TokenStream>();
  expectTypeOf(host.stats).toEqualTypeOf<GenerationStats>();
  // @ts-expect-error a prompt is token ids
  void host.generate(['a']);
  for await (const t of host.generate([1], { maxTokens: 1 })) expectTypeOf(t).toEqualTypeOf<number>();

  class Counter extends GenerationProxy<number> {
    constructor() {
      super({ maxBatchSize: 2 });
    }
    protected _initialState(): number {
      return 0;
    }
    protected async _step(steps: readonly StepInput<number>[]): Promise<Array<StepOutput<number>>> {
      return steps.map((s) => ({ token: s.token, state: s.state + 1 }));
    }
  }
  const counter = new Counter();
  expectTypeOf(counter.generate([1])).toEqualTypeOf<TokenStream>();

  class Writer {
    initialState(): { h: TensorLike } {
      return { h: { type: 'float32', data: new Float32Array(1), dims: [1, 1] } };
    }
    @generating({ maxBatchSize: 2, batcher: new DecoderBatcher({ token: 't', logits: 'l', state: { h: 'h2' } }) })
    async step(feeds: Record<string, TensorLike>): Promise<Record<string, TensorLike>> {
      return feeds;
    }
  }
  expectTypeOf(asGenerating(new Writer()).generate([1])).toEqualTypeOf<TokenStream>();
  const made = await createGenerationHost(Writer);
  expectTypeOf(made).toEqualTypeOf<GenerationHost<{ h: TensorLike }, unknown, unknown>>();
  expectTypeOf<DecoderState>().toEqualTypeOf<Readonly<Record<string, TensorLike>>>();
  await Promise.all([host.stop(), counter.close(), made.stop()]);
  expect(made).toBeInstanceOf(GenerationHost);
});
