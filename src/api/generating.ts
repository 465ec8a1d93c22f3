import { describe } from '../core/describe';
import { GenerationHost } from '../generate/generation-host';
import { resolveGeneration, type GenerateOptions, type GenerationOptions } from '../generate/options';
import type { TokenStream } from '../generate/token-stream';
import { nameOf } from './batching-metadata';
import { installGeneratedMembers, instanceState } from './generated-inference';

/**
 * Options of `@generating(...)`: a {@link GenerationOptions} without `initialState`, which the
 * class supplies as its `initialState(prompt)` method.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- stored per class, typed loosely: the class's own methods type the host
export type GeneratingOptions = Omit<GenerationOptions<any, any, any>, 'initialState'>;

/** What `@generating` records on a class: the step method and its options. @internal */
export interface GeneratingMetadata {
  readonly method: string | symbol;
  readonly options: Readonly<GeneratingOptions>;
}

const records = new WeakMap<object, GeneratingMetadata>();

/** The `@generating` step method of a class or its bases, if any. @internal */
export function findGeneratingMethod(Class: object): GeneratingMetadata | undefined {
  for (let c: object | null = Class; c !== null && c !== Function.prototype; c = Object.getPrototypeOf(c) as object | null) {
    const found = records.get(c);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The per-class state type: what its `initialState(prompt)` returns. */
export type StateOf<T> = T extends { initialState(prompt: readonly number[]): infer S } ? S : unknown;

/**
 * An instance of a class with a `@generating` step method, with the members the decorator adds:
 * `generate(prompt, options?)` and the disposers (which stop the instance's generation host, then
 * run the class's own).
 *
 * @example
 * ```ts
 * const writer: Generating<Writer> = asGenerating(container.resolve(Writer));
 * for await (const token of writer.generate([BOS])) process.stdout.write(vocab[token]);
 * ```
 */
export type Generating<T> = T & {
  /** Generates from `prompt`, batched per step with this instance's other running sequences. */
  generate(prompt: readonly number[], options?: GenerateOptions): TokenStream;
  /** Stops this instance's generation host (draining), then runs the class's own `dispose()`, if any. */
  dispose(): Promise<void>;
  /** Stops this instance's generation host (draining), then runs the class's own disposer, if any. */
  [Symbol.asyncDispose](): Promise<void>;
};

/**
 * Gives an instance of a `@generating` class its {@link Generating} type: a checked narrowing
 * that throws a `TypeError` when the class has no `@generating` method.
 *
 * @example
 * ```ts
 * const writer = asGenerating(new Writer(session));
 * const tokens = await writer.generate([BOS, 12], { maxTokens: 16 }).collect();
 * ```
 */
export function asGenerating<T extends object>(instance: T): Generating<T> {
  if (typeof instance !== 'object' || instance === null || findGeneratingMethod(instance.constructor) === undefined) {
    const what = typeof instance === 'object' && instance !== null ? `an instance of ${nameOf(instance.constructor)}` : String(instance);
    throw new TypeError(`asGenerating: expected an instance of a class with a @generating step method, got ${what}; decorate its step method with @generating(...)`);
  }
  return instance as Generating<T>;
}

/**
 * Marks a class's decode-step method for iteration-level batching: the method receives the batch
 * of running sequences (one `StepInput` each, or the `batcher`'s batch) and returns their outputs
 * (`{ logits | token, state }` each, or what the batcher splits). The class supplies
 * `initialState(prompt)`. Instances get `generate(prompt, options?)`, an `AsyncIterable` of
 * tokens, batched per step with the instance's other running sequences; `createGenerationHost`
 * builds the instance from a tsyringe context, as `createHost` does for `@batching`.
 *
 * Needs `"experimentalDecorators": true` (as tsyringe does).
 *
 * @example
 * ```ts
 * @injectable()
 * class Writer {
 *   constructor(@inject(OnnxSession) private readonly session: InferenceSession) {}
 *   initialState() { return { state: new Tensor('float32', new Float32Array(H), [1, H]) }; }
 *   @generating({ maxBatchSize: 16, batcher: new DecoderBatcher({ token: 'token', logits: 'logits', state: { state: 'next_state' } }) })
 *   step(feeds: Record<string, Tensor>) { return this.session.run(feeds); }
 * }
 * ```
 */
export function generating(options: GeneratingOptions): (target: object, method: string | symbol, descriptor: PropertyDescriptor) => void {
  if (arguments.length !== 1 || typeof options !== 'object' || options === null) {
    throw new TypeError(`@generating needs its options: write @generating({ maxBatchSize: 16, ... }), with the parentheses; got ${describe(options)}`);
  }
  const stored = Object.freeze({ ...options });
  return function decorate(target: object, method: string | symbol, descriptor?: PropertyDescriptor): void {
    if (typeof method === 'object' && method !== null && 'kind' in method) {
      throw new TypeError('@generating was applied as a TC39 standard decorator; microbatch (like tsyringe) needs "experimentalDecorators": true in tsconfig.json');
    }
    const ctor = typeof target === 'function' ? target : target.constructor;
    const at = `@generating on ${nameOf(ctor)}.${String(method)}`;
    if (typeof target === 'function') throw new TypeError(`${at}: it is a static method; @generating decorates an instance method (the decode step)`);
    if (descriptor === undefined || typeof descriptor.value !== 'function') {
      throw new TypeError(`${at}: expected a method that takes the batch of running sequences, got ${descriptor === undefined ? 'a field' : describe(descriptor.value)}`);
    }
    if (typeof (target as Record<string, unknown>).initialState !== 'function') {
      throw new TypeError(`${at}: ${nameOf(ctor)} needs an initialState(prompt) method: the state a new sequence starts from`);
    }
    // Checked now, so a bad option fails when the class is defined, not at the first generate().
    resolveGeneration(at, { ...stored, initialState: () => undefined });
    if (records.has(ctor)) throw new TypeError(`${at}: ${nameOf(ctor)} already has a @generating method (${String(records.get(ctor)?.method)}); a class has one decode step`);
    records.set(ctor, { method, options: stored });
    installGeneratedMembers(target, false);
    if (!('generate' in target)) {
      Object.defineProperty(target, 'generate', {
        value: function generate(this: object, prompt: readonly number[], options?: GenerateOptions): TokenStream {
          return generationHostOf(this).generate(prompt, options);
        },
        writable: true,
        configurable: true,
        enumerable: false,
      });
    }
  };
}

/** The instance's generation host, made at its first `generate()`. */
function generationHostOf(instance: object): GenerationHost<unknown, unknown, unknown> {
  const state = instanceState(instance);
  if (state.generation !== undefined) return state.generation as GenerationHost<unknown, unknown, unknown>;
  const ctor = instance.constructor;
  const found = findGeneratingMethod(ctor) as GeneratingMetadata;
  const self = instance as Record<string | symbol, (arg: unknown) => unknown>;
  const host = new GenerationHost<unknown, unknown, unknown>((batch) => self[found.method]!(batch), {
    name: `${nameOf(ctor)}.${String(found.method)}`,
    ...found.options,
    initialState: (prompt) => self.initialState!(prompt),
  });
  // A disposed instance's host exists and is stopped: generate() then fails with HostStoppedError.
  if (state.disposed !== undefined) void host.stop();
  state.generation = host;
  return host;
}
