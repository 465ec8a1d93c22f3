import type { LatencyModel, LatencyModelOptions } from './latency-model';

// The adaptive policy's options (their defaults are ADAPTIVE_DEFAULTS in defaults.ts) and counters.

/** Options of {@link microbatch!AdaptivePolicy}. */
export interface AdaptivePolicyOptions {
  /**
   * The run-time model to learn into, or options for a new one. Pass your own instance to share
   * what was learned with a later host (e.g. after a restart with the same model).
   * @default new LatencyModel()
   */
  latencyModel?: LatencyModel | LatencyModelOptions;
  /**
   * Longest predictive wait, counted from the oldest waiting request. The host's `maxDelayMs`,
   * when above 0, caps it too.
   * @default Infinity (the learned model and the deadlines decide)
   */
  maxWaitMs?: number;
  /**
   * Milliseconds kept in reserve on every deadline, for what the model does not time (merging,
   * splitting, event-loop lag). Raise it when answers arrive just past `maxLatencyMs`.
   * @default 0
   */
  marginMs?: number;
  /**
   * Shortest wait worth taking: a planned wait that ends sooner than this releases at once
   * instead. Node fires a timer after 1 ms at the earliest, so a planned 0.1 ms wait would really
   * cost 1 ms or more, which on a fast model is several batches' worth of latency (measured on a
   * 0.4 ms MLP: such waits were most of the policy's loss to `maxDelayMs: 0`). Set it to 0 with an
   * injected clock that keeps finer time.
   * @default 1
   */
  minWaitMs?: number;
  /**
   * Fraction of the expected-gain wait (see {@link microbatch!AdaptivePolicy}) actually waited, from 0 (never
   * wait, pure greedy) to 1. The full window minimises mean latency; in simulation half of it
   * kept the same mean and a tighter p99 tail.
   * @default 0.5
   */
  patience?: number;
  /**
   * Arrivals remembered to estimate the arrival rate that predictive waiting relies on.
   * @default 32
   */
  rateWindow?: number;
  /**
   * How many batches' worth of rows (times `maxBatchSize`) the policy reads from the head of the
   * queue and plans when checking that it can still be served on time (deeper requests are read
   * once they come closer, so a decision's cost does not grow with a backlog).
   * @default 8
   */
  planBatches?: number;
  /**
   * How long the measured arrival rate must exceed what the model can serve (full batches back to
   * back on every slot) before the policy sheds for overload. Shorter spells are absorbed by the
   * queue: requests that would be late are answered late rather than refused. Also how long the
   * model's own speed is remembered (its fastest full-batch estimate over the last one to two
   * `overloadMs`), against which arrivals are judged to have outrun it.
   * @default 1000
   */
  overloadMs?: number;
}

/** Counters of an {@link microbatch!AdaptivePolicy}, for logs and tests. */
export interface AdaptiveStats {
  /** Requests shed because they could not finish in time even if run alone at once. */
  readonly shedAlone: number;
  /**
   * Requests shed under sustained overload because the plan ends their batch past their due time on
   * the mean (never the next batch's); also in overload right after a batch that ran 1.3× its
   * prediction or more, with the plan priced at that slowdown.
   */
  readonly shedOverload: number;
  /**
   * Requests refused as they arrived, every slot busy: certainly late behind the backlog, or, once
   * that happened (overload), beyond the short queue kept (one and a half full batches per slot,
   * or as many as a doubled run time still ends in time). The sum of the three `refused…`
   * counters below.
   */
  readonly shedAtArrival: number;
  /** Refused on arrival outside overload: certain to miss its budget behind the backlog ahead (each such refusal starts an overload). */
  readonly refusedCertainMiss: number;
  /**
   * Overloads started before any certain miss: over a busy period at least a budget long, arrivals
   * came 10% faster than the model's own speed (its fastest full batches lately) can serve.
   */
  readonly overloadsByRate: number;
  /**
   * Refused on arrival in overload: beyond the queue kept, one full batch per batch slot plus what
   * keeps the next one full at the arrival rate (at most one and a half full batches per slot), or
   * plus the whole batches a doubled run time still ends in time (at most two per slot).
   */
  readonly refusedOverQueue: number;
  /** Refused on arrival in overload: its batch, counted full, would end at or past its due time on the mean. */
  readonly refusedOverBudget: number;
  /** Times the policy chose to wait for a fuller batch while the model was idle. */
  readonly waits: number;
  /** Batches made smaller than the queue allowed because that left fewer requests late. */
  readonly deadlineLimited: number;
}

/** Checks one numeric option of the policy. @internal */
export function nonNegative(key: string, value: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`AdaptivePolicy: expected \`${key}\` to be a number >= 0, got ${String(value)}`);
  }
  return value;
}
