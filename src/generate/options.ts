import type { Batcher } from '../core/batcher';
import type { Clock } from '../core/clock';
import { describe, toError } from '../core/describe';
import { GENERATION_DEFAULTS } from '../core/defaults';
import { checkMs, fail, optionKeys, positiveInteger, rejectUnknownKeys } from '../core/option-checks';
import { checkRequestOptions } from '../engine/request-options';
import type { GenerationObserver } from './events';

/**
 * One running sequence's input to a decode step.
 *
 * @typeParam State - what the sequence carries from step to step (a recurrent state, a key/value cache).
 */
export interface StepInput<State> {
  /** The token this step reads: the next prompt token while the prompt is read, then the last one generated. */
  readonly token: number;
  /** The sequence's state after its previous step (`initialState(prompt)` at its first). */
  readonly state: State;
  /** Tokens the sequence has read before this one (0 at its first step). */
  readonly position: number;
}

/**
 * One sequence's output of a decode step: the next token's scores (`logits`, turned into a token
 * by the host's `choose`) or the token itself, and the sequence's new state.
 */
export interface StepOutput<State> {
  /** Scores over the vocabulary; the host's `choose` picks the token (greedy by default). */
  readonly logits?: ArrayLike<number>;
  /** The chosen token, for a step that samples by itself (wins over `logits`). */
  readonly token?: number;
  /** The state the sequence's next step receives. */
  readonly state: State;
}

/**
 * The token of one sequence's step (or prefill) output: its own `token`, else `choose(logits)`;
 * for the output of a prompt token that is not the prompt's last (`prompting`) nothing is chosen
 * (0, which the caller ignores). An Error says what is wrong with the output. `where` names the
 * output in messages. @internal
 */
export function stepToken(out: StepOutput<unknown>, prompting: boolean, choose: (logits: ArrayLike<number>) => number, where: string): number | Error {
  let token = out.token;
  if (token === undefined) {
    if (out.logits === undefined || typeof out.logits.length !== 'number') return new TypeError(`${where} has neither \`token\` nor \`logits\` (scores over the vocabulary)`);
    if (prompting) return 0;
    try {
      token = choose(out.logits);
    } catch (e) {
      return toError(e, 'choose');
    }
  }
  if (typeof token !== 'number' || !Number.isInteger(token) || token < 0) return new TypeError(`${where}: expected a token id (an integer from 0 up), got ${describe(token)}`);
  return token;
}

/** A new sequence's input to the prefill: its whole prompt, and the state `initialState` gave it. */
export interface PrefillInput<State> {
  readonly prompt: readonly number[];
  readonly state: State;
}

/**
 * Options of a {@link GenerationHost}.
 *
 * @typeParam State - per-sequence state.
 * @typeParam Batch - what the step function receives (the batcher's batch).
 * @typeParam BatchOut - what the step function returns.
 *
 * @example
 * ```ts
 * const options: GenerationOptions<Float32Array> = {
 *   maxBatchSize: 16,
 *   initialState: () => new Float32Array(256),
 *   stopTokens: [EOS],
 * };
 * ```
 */
export interface GenerationOptions<State, Batch = readonly StepInput<State>[], BatchOut = ReadonlyArray<StepOutput<State> | Error>> {
  /**
   * Sequences that run together, one row each per step (the slots). A new sequence joins at the
   * next step after a slot frees.
   */
  maxBatchSize: number;
  /** The state a new sequence starts from, before its first prompt token. */
  initialState: (prompt: readonly number[]) => State;
  /**
   * Reads new sequences' whole prompts in one call instead of one token per step: it receives the
   * sequences that joined (their prompts and initial states) and returns, for each, the state
   * after its prompt and the scores (or token) of its first generated token, which is delivered at
   * once; the sequence then joins the decode steps. Batched across the sequences that join at the
   * same step.
   * @default none: prompts are read through the step function, one token per step
   */
  prefill?: (prompts: ReadonlyArray<PrefillInput<State>>) => ReadonlyArray<StepOutput<State> | Error> | PromiseLike<ReadonlyArray<StepOutput<State> | Error>>;
  /**
   * Merges the running sequences' step inputs into the step function's batch and splits its
   * output back per sequence (see `DecoderBatcher` for ONNX decoders).
   * @default the step function receives the `StepInput` array and returns one `StepOutput` per sequence
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  batcher?: Batcher<StepInput<State>, StepOutput<State>, Batch, BatchOut, any>;
  /**
   * Called once with a sequence's last state when it ends, whichever way (for states that hold
   * resources: a handle to state kept elsewhere, such as in a worker thread).
   * @default none
   */
  releaseState?: (state: State) => void;
  /**
   * Tokens generated per sequence at most, unless `generate()` asks for another number.
   * @default 256
   */
  maxTokens?: number;
  /**
   * Tokens that end a sequence; the stop token itself is delivered (as the last token).
   * @default none
   */
  stopTokens?: readonly number[];
  /**
   * Turns a step's `logits` into a token.
   * @default greedy: the index of the largest score (the lowest index on ties)
   */
  choose?: (logits: ArrayLike<number>) => number;
  /**
   * Prompts waiting for a slot at most; past it `generate()` fails with `QueueFullError`.
   * @default Infinity
   */
  maxQueueSize?: number;
  /**
   * A sequence's time limit, from `generate()` to its last token, unless `generate()` gives one:
   * past it, waiting prompts fail with `DeadlineExceededError` and running sequences end with it
   * after the tokens already delivered.
   * @default Infinity
   */
  timeoutMs?: number;
  /**
   * Names the host in errors and reports.
   * @default 'generation'
   */
  name?: string;
  /** Receives a report per step and per sequence (time to first token, tokens/s). @default none */
  observer?: GenerationObserver;
  /** Time source (a `ManualClock` in tests). @default the system clock */
  clock?: Clock;
}

/**
 * Options of one `generate()` call.
 *
 * @example
 * ```ts
 * host.generate(prompt, { maxTokens: 32, signal: AbortSignal.timeout(5_000), priority: 1 });
 * ```
 */
export interface GenerateOptions {
  /** @default the host's `maxTokens` */
  maxTokens?: number;
  /** Aborts the sequence: a waiting prompt leaves the queue, a running one frees its slot at the next step. @default none */
  signal?: AbortSignal;
  /** Larger is admitted first when slots are short; equal priorities keep arrival order. @default 0 */
  priority?: number;
  /** @default the host's `timeoutMs` */
  timeoutMs?: number;
  /** @default the host's `stopTokens` */
  stopTokens?: readonly number[];
}

/** Every key of {@link GenerationOptions}, derived from the type. @internal */
export const GENERATION_OPTION_KEYS = optionKeys<GenerationOptions<unknown>>({
  maxBatchSize: true,
  initialState: true,
  prefill: true,
  releaseState: true,
  batcher: true,
  maxTokens: true,
  stopTokens: true,
  choose: true,
  maxQueueSize: true,
  timeoutMs: true,
  name: true,
  observer: true,
  clock: true,
});

const GENERATE_KEYS = optionKeys<GenerateOptions>({ maxTokens: true, signal: true, priority: true, timeoutMs: true, stopTokens: true });

/** The checked options with their defaults. @internal */
export interface ResolvedGeneration {
  readonly maxBatchSize: number;
  readonly maxTokens: number;
  readonly stopTokens: ReadonlySet<number>;
  readonly maxQueueSize: number;
  readonly timeoutMs: number;
  readonly name: string;
}

/** Checks a host's options (a typo must not wait for the first step). @internal */
export function resolveGeneration(where: string, options: unknown): ResolvedGeneration {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object with at least maxBatchSize and initialState', options);
  rejectUnknownKeys(where, options, GENERATION_OPTION_KEYS);
  const o = options as GenerationOptions<unknown>;
  if (o.name !== undefined && (typeof o.name !== 'string' || o.name === '')) fail(where, 'name', 'a non-empty string', o.name);
  if (typeof o.initialState !== 'function') fail(where, 'initialState', 'a function (prompt) => state', o.initialState);
  if (o.choose !== undefined && typeof o.choose !== 'function') fail(where, 'choose', 'a function (logits) => token', o.choose);
  if (o.releaseState !== undefined && typeof o.releaseState !== 'function') fail(where, 'releaseState', 'a function (state) => void', o.releaseState);
  if (o.prefill !== undefined && typeof o.prefill !== 'function') fail(where, 'prefill', 'a function (prompts) => outputs', o.prefill);
  const b = o.batcher as { merge?: unknown; split?: unknown } | undefined;
  if (b !== undefined && (typeof b !== 'object' || b === null || typeof b.merge !== 'function' || typeof b.split !== 'function')) {
    fail(where, 'batcher', 'a batcher with merge(items) and split(output, ctx)', b);
  }
  return {
    maxBatchSize: positiveInteger(where, 'maxBatchSize', o.maxBatchSize),
    maxTokens: o.maxTokens === undefined ? GENERATION_DEFAULTS.maxTokens : positiveInteger(where, 'maxTokens', o.maxTokens),
    stopTokens: new Set(checkTokens(where, 'stopTokens', o.stopTokens ?? [])),
    maxQueueSize: o.maxQueueSize === undefined ? GENERATION_DEFAULTS.maxQueueSize : positiveInteger(where, 'maxQueueSize', o.maxQueueSize, true),
    timeoutMs: o.timeoutMs === undefined ? GENERATION_DEFAULTS.timeoutMs : checkMs(where, 'timeoutMs', o.timeoutMs, 'positive'),
    name: o.name ?? GENERATION_DEFAULTS.name,
  };
}

/**
 * Checks one `generate()` call; returns the error to fail its stream with, if any. `signal`,
 * `timeoutMs` and `priority` are checked as every call's are (`checkRequestOptions`); the prompt,
 * `maxTokens` and `stopTokens` here. @internal
 */
export function checkGenerate(where: string, prompt: unknown, options: unknown): Error | undefined {
  try {
    checkTokens(where, 'prompt', prompt);
    if ((prompt as readonly number[]).length === 0) {
      throw new RangeError(`${where}: expected \`prompt\` to hold at least one token (start it with your model's begin-of-sequence token), got an empty array`);
    }
    if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object { maxTokens?, signal?, priority?, timeoutMs?, stopTokens? }', options);
    const o = options as GenerateOptions;
    const bad = checkRequestOptions(where, o, GENERATE_KEYS, where);
    if (bad !== undefined) return bad;
    if (o.maxTokens !== undefined) positiveInteger(where, 'maxTokens', o.maxTokens);
    if (o.stopTokens !== undefined) checkTokens(where, 'stopTokens', o.stopTokens);
  } catch (e) {
    return e as Error;
  }
  return undefined;
}

/** Token ids: an array of integers from 0 up. */
function checkTokens(where: string, key: string, value: unknown): readonly number[] {
  if (!Array.isArray(value)) fail(where, key, 'an array of token ids (integers from 0 up)', value);
  for (const [i, t] of (value as unknown[]).entries()) {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0) {
      throw new TypeError(`${where}: expected \`${key}\` to hold token ids (integers from 0 up), got ${describe(t)} at index ${i}`);
    }
  }
  return value as readonly number[];
}
