import 'reflect-metadata';
import { container, inject, injectable } from 'tsyringe';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { GenerationProxy, GenerativeProxy } from '../../src/api/generative-proxy';
import { greedy, greedyToken } from '../../src/api/greedy-token';
import { asGenerating, generating } from '../../src/api/generating';
import { createGenerationHost } from '../../src/api/create-generation-host';
import { createHost } from '../../src/api/create-host';
import { batching } from '../../src/api/batching';
import { OnnxSession } from '../../src/api/tokens';
import { HostStoppedError } from '../../src/core/errors';
import { DecoderBatcher } from '../../src/generate/decoder-batcher';
import type { StepInput } from '../../src/generate/options';
import { recurrentDecoderModel } from '../../examples/support/decoder-models';
import { recurrentAlone } from '../support/greedy-alone';

// The two user styles of generation, beside Proxy and @batching: a subclass, and a decorated step
// method (on instances, and built from a tsyringe context by createGenerationHost).

const Step = Symbol('Step');

/** Counts up by `by` from the last token, mod 10; 0 is the stop token. */
function countStep(by: number) {
  return async (steps: readonly StepInput<number>[]) => steps.map((s) => ({ token: (s.token + by) % 10, state: s.state + 1 }));
}

test('GenerativeProxy and greedy (deprecated: GenerationProxy, greedyToken) are the same class and function', () => {
  expect(GenerativeProxy).toBe(GenerationProxy);
  expect(greedy).toBe(greedyToken);
  expect(greedyToken([0.1, 2.5, 0.3])).toBe(1);
});

describe('GenerationProxy (subclass style)', () => {
  class Counter extends GenerationProxy<number> {
    readonly sizes: number[] = [];
    constructor() {
      super({ maxBatchSize: 8, stopTokens: [0] });
    }
    protected _initialState(): number {
      return 0;
    }
    protected async _step(steps: readonly StepInput<number>[]) {
      this.sizes.push(steps.length);
      return countStep(1)(steps);
    }
  }

  test('generate() streams each caller its tokens; concurrent callers share steps; close() drains', async () => {
    const counter = new Counter();
    const [a, b] = await Promise.all([counter.generate([7]).collect(), counter.generate([4]).collect()]);
    expect(a).toEqual([8, 9, 0]);
    expect(b).toEqual([5, 6, 7, 8, 9, 0]);
    expect(counter.sizes).toEqual([2, 2, 2, 1, 1, 1]);
    expect(counter.stats).toMatchObject({ steps: 6, tokens: 9, sequences: { stop: 2 } });
    await counter.close();
    await expect(counter.generate([1]).collect()).rejects.toThrow(new HostStoppedError('Counter.generate: the host is stopped (or stopping)'));
  });
});

test('GenerationProxy with _prefill: prompts are read whole, and _step only decodes', async () => {
  class Prefilled extends GenerationProxy<number> {
    readonly stepTokens: number[][] = [];
    constructor() {
      super({ maxBatchSize: 4 });
    }
    protected _initialState(): number {
      return 0;
    }
    protected override async _prefill(prompts: ReadonlyArray<{ prompt: readonly number[]; state: number }>) {
      return prompts.map((p) => ({ token: p.prompt.reduce((a, b) => a + b, 0) % 10, state: p.prompt.length }));
    }
    protected async _step(steps: readonly StepInput<number>[]) {
      this.stepTokens.push(steps.map((s) => s.token));
      return countStep(1)(steps);
    }
  }
  const p = new Prefilled();
  expect(await p.generate([3, 4, 5], { maxTokens: 3 }).collect()).toEqual([2, 3, 4]);
  expect(p.stepTokens).toEqual([[2], [3]]); // never a prompt token
  await p.close();
});

describe('@generating (decorator style)', () => {
  class Writer {
    constructor(readonly by = 3) {}
    initialState(): number {
      return 0;
    }
    @generating({ maxBatchSize: 4, stopTokens: [0] })
    async step(steps: readonly StepInput<number>[]) {
      return countStep(this.by)(steps);
    }
    @batching(8)
    async predictBatch(xs: readonly number[]): Promise<number[]> {
      return xs.map((x) => x * 2);
    }
  }

  test('instances get generate(); each instance has its own host; dispose() stops generation and batching', async () => {
    const w = asGenerating(new Writer());
    expect(await w.generate([1]).collect()).toEqual([4, 7, 0]);
    const other = asGenerating(new Writer(5));
    expect(await other.generate([1], { maxTokens: 4 }).collect()).toEqual([6, 1, 6, 1]); // its own `by`
    expect(await other.generate([5]).collect()).toEqual([0]);
    expect(await (w as unknown as { inference(x: number): Promise<number> }).inference(21)).toBe(42);
    await w.dispose();
    await expect(w.generate([1]).collect()).rejects.toBeInstanceOf(HostStoppedError);
    await expect((w as unknown as { inference(x: number): Promise<number> }).inference(1)).rejects.toBeInstanceOf(HostStoppedError);
    await other.dispose();
  });

  test('misuse is refused when the class is defined, with what was expected', () => {
    const define = (fn: () => void) => fn;
    expect(
      define(() => {
        class NoState {
          @generating({ maxBatchSize: 2 })
          async step(): Promise<never[]> {
            return [];
          }
        }
        void NoState;
      }),
    ).toThrow(new TypeError('@generating on NoState.step: NoState needs an initialState(prompt) method: the state a new sequence starts from'));
    expect(
      define(() => {
        class BadOptions {
          initialState() {
            return 0;
          }
          @generating({ maxBatchSize: 0 })
          async step(): Promise<never[]> {
            return [];
          }
        }
        void BadOptions;
      }),
    ).toThrow(new RangeError('@generating on BadOptions.step: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'));
    expect(
      define(() => {
        class Twice {
          initialState() {
            return 0;
          }
          @generating({ maxBatchSize: 2 })
          async a(): Promise<never[]> {
            return [];
          }
          @generating({ maxBatchSize: 2 })
          async b(): Promise<never[]> {
            return [];
          }
        }
        void Twice;
      }),
    ).toThrow(new TypeError('@generating on Twice.b: Twice already has a @generating method (a); a class has one decode step'));
    expect(() => (generating as unknown as () => unknown)()).toThrow(/^@generating needs its options: write @generating\(\{ maxBatchSize: 16, \.\.\. \}\)/);
    expect(() => asGenerating({})).toThrow(new TypeError('asGenerating: expected an instance of a class with a @generating step method, got an instance of Object; decorate its step method with @generating(...)'));
  });
});

describe('createGenerationHost (the tsyringe context)', () => {
  @injectable()
  class Stepper {
    constructor(@inject(Step) private readonly by: { n: number; release(): void }) {}
    initialState(): number {
      return 0;
    }
    @generating({ maxBatchSize: 2, stopTokens: [0] })
    async step(steps: readonly StepInput<number>[]) {
      return countStep(this.by.n)(steps);
    }
  }

  test('resolves the class from its context, batches its step, and releases the context on stop()', async () => {
    const log: string[] = [];
    const host = await createGenerationHost(Stepper, { context: { [Step]: async () => ({ n: 2, release: () => void log.push('released') }) }, maxBatchSize: 3 });
    expect(host.name).toBe('Stepper.step');
    expect(host.options.maxBatchSize).toBe(3); // the override beats the decorator
    expect(await Promise.all([host.generate([4]).collect(), host.generate([8]).collect()])).toEqual([[6, 8, 0], [0]]);
    await host.stop();
    expect(log).toEqual(['released']);
  });

  test('bad calls are named: no @generating method, unknown options, a provider that fails', async () => {
    class Plain {}
    await expect(createGenerationHost(Plain)).rejects.toThrow(
      new TypeError('createGenerationHost(Plain): Plain has no @generating method; decorate its decode step with @generating({ maxBatchSize, ... })'),
    );
    await expect(createGenerationHost(Stepper, { maxBatchsize: 2 } as never)).rejects.toThrow(/^createGenerationHost\(Stepper\): unknown option `maxBatchsize`; the known options are `container`, `context`, /);
    await expect(createGenerationHost(Stepper, { context: { [Step]: () => Promise.reject(new Error('no file')) } })).rejects.toThrow(/no file/);
    await expect(createGenerationHost(Stepper, { container: {} as never })).rejects.toThrow(new TypeError('createGenerationHost(Stepper): expected `container` to be a tsyringe DependencyContainer, got an object'));
    expect(container.isRegistered(Step)).toBe(false); // nothing written to the global container
    await expect(createHost(Stepper)).rejects.toThrow(
      new TypeError('createHost(Stepper): Stepper has a @generating step method, not an @batching one; build its host with createGenerationHost(Stepper, { context })'),
    );
  });

  test('a real ONNX decoder through the decorator and an OnnxSession context: greedy tokens equal decoding alone', async () => {
    const H = 8;
    const tensor = (type: string, data: unknown, dims: readonly number[]) => new Tensor(type as Tensor.Type, data as Tensor.DataType, dims);
    @injectable()
    class Decoder {
      constructor(@inject(OnnxSession) private readonly session: InferenceSession) {}
      initialState() {
        return { state: new Tensor('float32', new Float32Array(H), [1, H]) };
      }
      @generating({ maxBatchSize: 4, batcher: new DecoderBatcher<Tensor>({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor }) })
      step(feeds: Record<string, Tensor>) {
        return this.session.run(feeds);
      }
    }
    const host = await createGenerationHost(Decoder, { context: { [OnnxSession]: () => InferenceSession.create(recurrentDecoderModel(), { intraOpNumThreads: 1 }) } });
    const prompts = [[3], [5, 1], [11, 2, 9]];
    const got = await Promise.all(prompts.map((p, i) => host.generate(p, { maxTokens: 5 + i * 3 }).collect()));
    expect(got).toEqual(prompts.map((p, i) => recurrentAlone(p, 5 + i * 3)));
    await host.stop(); // releases the session
  });
});
