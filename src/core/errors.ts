/**
 * Base class of every error microbatch itself raises, so callers can tell them from the model's.
 *
 * @example
 * ```ts
 * try { await host.inference(x); }
 * catch (e) { if (e instanceof MicrobatchError) console.warn('rejected by the batcher:', e.message); }
 * ```
 */
export class MicrobatchError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The queue already held `maxQueueSize` waiting requests, so this one was refused at once and
 * nothing was queued. An HTTP layer maps it to `503 Service Unavailable` with `Retry-After`.
 *
 * @example
 * ```ts
 * catch (e) { if (e instanceof QueueFullError) res.writeHead(503, { 'Retry-After': '1' }); }
 * ```
 */
export class QueueFullError extends MicrobatchError {
  /** The `maxQueueSize` in force when the request was refused. */
  readonly maxQueueSize: number;
  constructor(hostName: string, maxQueueSize: number) {
    super(
      `${hostName}: the queue is full (maxQueueSize is ${maxQueueSize} waiting requests); ` +
        'the request was refused without being queued. Retry later or raise maxQueueSize.',
    );
    this.maxQueueSize = maxQueueSize;
  }
}

/**
 * Why a {@link DeadlineExceededError} was raised:
 * - `'timeout'`: the request's `timeoutMs` elapsed (while queued or while its batch ran);
 * - `'batch-timeout'`: the batch it was part of ran longer than `batchTimeoutMs`;
 * - `'shed'`: the policy predicted it could not meet its deadline and rejected it before running.
 */
export type DeadlineReason = 'timeout' | 'batch-timeout' | 'shed';

/**
 * The request ran out of time. The message says whether it expired in the queue (it never ran),
 * while its batch was running (the result is discarded), or was shed by prediction.
 *
 * @example
 * ```ts
 * await host.inference(x, { timeoutMs: 50 }).catch((e) => {
 *   if (e instanceof DeadlineExceededError) return fallback(x);
 *   throw e;
 * });
 * ```
 */
export class DeadlineExceededError extends MicrobatchError {
  /** What ran out: see {@link DeadlineReason}. */
  readonly reason: DeadlineReason;
  /** Where the request was when time ran out. */
  readonly phase: 'queued' | 'running';
  /** Milliseconds from `inference()` to the rejection. */
  readonly elapsedMs: number;
  constructor(message: string, reason: DeadlineReason, phase: 'queued' | 'running', elapsedMs: number) {
    super(message);
    this.reason = reason;
    this.phase = phase;
    this.elapsedMs = elapsedMs;
  }
}

/**
 * The caller's `AbortSignal` fired. `cause` is `signal.reason`. A queued request leaves the queue
 * at once; a running one is settled at once and its result discarded.
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * const p = host.inference(x, { signal: ac.signal });
 * ac.abort();
 * await p.catch((e) => e.name === 'AbortError'); // true
 * ```
 */
export class AbortError extends MicrobatchError {
  constructor(message: string, reason: unknown) {
    super(message, { cause: reason });
    this.name = 'AbortError';
  }
}

/**
 * The host was stopped: either `inference()` was called after `stop()`, or the request was still
 * queued when `stop({ drain: false })` ran.
 *
 * @example
 * ```ts
 * await host.stop();
 * await host.inference(x); // rejects with HostStoppedError
 * ```
 */
export class HostStoppedError extends MicrobatchError {}

/**
 * The batch function broke the length contract: it must return exactly one result per item (or,
 * for tensor batchers, one row per input row). Every request in that batch is rejected with this.
 *
 * @example
 * ```ts
 * // batch function returned 3 results for 4 items:
 * // BatchSizeMismatchError: ... expected 4 results (one per item, in order), got 3
 * ```
 */
export class BatchSizeMismatchError extends MicrobatchError {
  /** How many results (or rows) the contract required. */
  readonly expected: number;
  /** How many came back. */
  readonly actual: number;
  constructor(message: string, expected: number, actual: number) {
    super(message);
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * A request handed to model replicas through a shared queue (`microbatch/redis`) was delivered
 * `deliveries` times, and each time the replica holding it crashed or stalled before answering: the
 * input is taken for poison and answered with this instead of being run again. Its former
 * batch-mates are unaffected (after its first failure it only ever runs alone).
 *
 * @example
 * ```ts
 * try { await model.inference(x); }
 * catch (e) { if (e instanceof DeliveryLimitError) log.warn(`poison input after ${e.deliveries} deliveries`); }
 * ```
 */
export class DeliveryLimitError extends MicrobatchError {
  /** How many times the request was delivered without an answer. */
  readonly deliveries: number;
  constructor(message: string, deliveries: number) {
    super(message);
    this.deliveries = deliveries;
  }
}
