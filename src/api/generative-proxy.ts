import { GenerationHost, type GenerationStats } from '../generate/generation-host';
import type { GenerateOptions, GenerationOptions, PrefillInput, StepInput, StepOutput } from '../generate/options';
import type { TokenStream } from '../generate/token-stream';

/**
 * Options of a {@link GenerationProxy}: a {@link GenerationOptions} without `initialState` and
 * `prefill`, which the subclass implements as `_initialState(prompt)` and (optionally) `_prefill`.
 */
export type GenerationProxyOptions<State, Batch = readonly StepInput<State>[], BatchOut = ReadonlyArray<StepOutput<State> | Error>> = Omit<
  GenerationOptions<State, Batch, BatchOut>,
  'initialState' | 'prefill'
>;

/**
 * Subclass style of generation, beside `Proxy`: extend `GenerationProxy<State>`, pass the options
 * to `super()`, and implement `_step(batch)` (one decode step over the running sequences) and
 * `_initialState(prompt)`. Callers use `generate(prompt)`; the running sequences share each step.
 *
 * @typeParam State - what a sequence carries between steps.
 * @typeParam Batch - what `_step` receives (the `StepInput` array, unless a batcher is given).
 * @typeParam BatchOut - what `_step` returns.
 *
 * @example
 * ```ts
 * class Counter extends GenerationProxy<number> {
 *   constructor() { super({ maxBatchSize: 8, stopTokens: [0] }); }
 *   protected _initialState(): number { return 0; }
 *   protected async _step(steps: readonly StepInput<number>[]) {
 *     return steps.map((s) => ({ token: (s.token + 1) % 10, state: s.state + 1 }));
 *   }
 * }
 * const tokens = await new Counter().generate([7]).collect(); // [8, 9, 0]
 * ```
 */
export abstract class GenerationProxy<State, Batch = readonly StepInput<State>[], BatchOut = ReadonlyArray<StepOutput<State> | Error>> implements AsyncDisposable {
  readonly #host: GenerationHost<State, Batch, BatchOut>;

  /** @param options - limits and behaviour; `name` defaults to the subclass's name. */
  constructor(options: GenerationProxyOptions<State, Batch, BatchOut>) {
    const named = options !== null && typeof options === 'object' && options.name === undefined ? { ...options, name: new.target.name || 'GenerativeProxy' } : options;
    // A subclass that defines _prefill reads prompts whole; one that does not, token by token.
    const prefill = typeof this._prefill === 'function' ? (prompts: ReadonlyArray<PrefillInput<State>>) => (this._prefill as NonNullable<typeof this._prefill>)(prompts) : undefined;
    this.#host = new GenerationHost<State, Batch, BatchOut>((batch: Batch) => this._step(batch), {
      ...(named as GenerationProxyOptions<State, Batch, BatchOut>),
      initialState: (prompt) => this._initialState(prompt),
      ...(prefill === undefined ? {} : { prefill }),
    });
  }

  /**
   * One decode step over the running sequences. Without a batcher it receives their `StepInput`s
   * and returns one `{ logits | token, state }` (or `Error`, which ends only that sequence) per
   * sequence, in order; throwing ends every sequence of the step.
   */
  protected abstract _step(batch: Batch): Promise<BatchOut>;

  /** The state a new sequence starts from. */
  protected abstract _initialState(prompt: readonly number[]): State;

  /**
   * Optional: reads joining sequences' whole prompts in one call (see `GenerationOptions.prefill`).
   * Leave it out to read prompts through `_step`, one token per step.
   */
  protected _prefill?(prompts: ReadonlyArray<PrefillInput<State>>): Promise<ReadonlyArray<StepOutput<State> | Error>>;

  /** Generates from `prompt`; see {@link GenerationHost.generate}. */
  generate(prompt: readonly number[], options?: GenerateOptions): TokenStream {
    return this.#host.generate(prompt, options);
  }

  /** The host's counters; see {@link GenerationHost.stats}. */
  get stats(): GenerationStats {
    return this.#host.stats;
  }

  /** Resolves when no sequence waits or runs. */
  onIdle(): Promise<void> {
    return this.#host.onIdle();
  }

  /** Stops taking prompts and (by default) lets the running ones finish; see {@link GenerationHost.stop}. */
  close(options?: { drain?: boolean }): Promise<void> {
    return this.#host.stop(options);
  }

  /** `await using g = new MyGenerator()` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * The older name of {@link GenerationProxy}.
 * @deprecated Use {@link GenerationProxy} (generation names follow the batching ones: `Proxy`, `GenerationProxy`).
 *
 * @example
 * ```ts
 * class Counter extends GenerativeProxy<number> { ... } // now: extends GenerationProxy<number>
 * ```
 */
export const GenerativeProxy = GenerationProxy;
/** @deprecated Use {@link GenerationProxy}. */
export type GenerativeProxy<State, Batch = readonly StepInput<State>[], BatchOut = ReadonlyArray<StepOutput<State> | Error>> = GenerationProxy<State, Batch, BatchOut>;
/** @deprecated Use {@link GenerationProxyOptions}. */
export type GenerativeProxyOptions<State, Batch = readonly StepInput<State>[], BatchOut = ReadonlyArray<StepOutput<State> | Error>> = GenerationProxyOptions<State, Batch, BatchOut>;
