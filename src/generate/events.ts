/** What happened in one decode step (all times in milliseconds). */
export interface StepEvent {
  /** The host's `name`. */
  readonly host: string;
  /** A prefill call (new sequences' whole prompts) rather than a decode step. */
  readonly prefill: boolean;
  /** Sequences (rows) in the step. */
  readonly sequences: number;
  /** Of them, sequences whose first step this was. */
  readonly joined: number;
  /** Of them, sequences reading their prompt (in a decode step, their output is not a generated token; in a prefill, all). */
  readonly prefilling: number;
  /** Tokens generated (delivered to callers) by this step. */
  readonly tokens: number;
  /** Sequences that ended with this step (stop token, `maxTokens`, a failure). */
  readonly finished: number;
  /** Time in the step: merge, the step function, split. */
  readonly runMs: number;
  /** Prompts still waiting for a slot after the step's admissions. */
  readonly waiting: number;
}

/** How a sequence ended. */
export type SequenceOutcome = 'stop' | 'length' | 'cancelled' | 'error' | 'timeout' | 'aborted' | 'queue-full' | 'stopped';

/** What happened to one `generate()` call (all times in milliseconds). */
export interface SequenceEvent {
  /** The host's `name`. */
  readonly host: string;
  /** How it ended: `'stop'` (a stop token), `'length'` (`maxTokens`), or why it failed. */
  readonly outcome: SequenceOutcome;
  /** Tokens in its prompt. */
  readonly promptTokens: number;
  /** Tokens it generated. */
  readonly tokens: number;
  /** From `generate()` to its first step (or to its end, if it never ran). */
  readonly queueMs: number;
  /** From `generate()` to its first generated token; `NaN` when it produced none. */
  readonly timeToFirstTokenMs: number;
  /** From `generate()` to its end. */
  readonly totalMs: number;
  /** Tokens per second after the first token (decode speed as the caller saw it); 0 with fewer than 2 tokens or no time between them. */
  readonly tokensPerSecond: number;
}

/**
 * Receives a generation host's reports, synchronously on its thread (keep it cheap); an observer
 * that throws is reported once with `process.emitWarning` and never disturbs the host.
 * `prometheusMetrics().observer` is one.
 *
 * @example
 * ```ts
 * const observer: GenerationObserver = { onSequence: (e) => console.log(`TTFT ${e.timeToFirstTokenMs.toFixed(1)} ms, ${e.tokensPerSecond.toFixed(0)} tok/s`) };
 * ```
 */
export interface GenerationObserver {
  /** After every decode step. */
  onStep?(event: StepEvent): void;
  /** After every sequence ends, whichever way. */
  onSequence?(event: SequenceEvent): void;
}
