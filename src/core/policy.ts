/**
 * Why a batch was released, as reported to observers:
 * - `'full'`: `maxBatchSize` rows were waiting;
 * - `'idle'`: a batch slot was free and the policy chose not to wait (work-conserving);
 * - `'timer'`: the `maxDelayMs` window, counted from the oldest waiting request, closed;
 * - `'deadline'`: waiting longer would have cost a queued request its deadline;
 * - `'drain'`: the host is stopping and answers everything it accepted;
 * - `'warmup'`: a warm-up batch that `start()` ran before the host took traffic (see `warmup`).
 */
export type ReleaseReason = 'full' | 'idle' | 'timer' | 'deadline' | 'drain' | 'warmup';

/**
 * What a policy sees when the host asks whether to release a batch. All times are clock
 * milliseconds. Read-only: a policy decides, the host acts.
 */
export interface QueueView {
  /** The clock's current reading. */
  readonly now: number;
  /** Rows of the waiting requests. */
  readonly queuedRows: number;
  /** Number of waiting requests. */
  readonly queuedRequests: number;
  /** Enqueue time of the oldest waiting request. */
  readonly oldestEnqueuedAt: number;
  /** Earliest deadline among waiting requests (`Infinity` if none). Computed on demand. */
  earliestDeadline(): number;
  /** Batches running now. */
  readonly inFlight: number;
  /** Batch slots free now (`maxConcurrentBatches - inFlight`, at least 1 when asked). */
  readonly freeSlots: number;
  /** The host's current limits. */
  readonly maxBatchSize: number;
  /**
   * The batching window that ends first: the host's `maxDelayMs`, or with per-level `priorities`
   * the window of the level whose window ends first.
   */
  readonly maxDelayMs: number;
  /**
   * When that window ends: the oldest waiting request's enqueue time plus `maxDelayMs`, or with
   * `priorities` the earliest such end over the levels waiting.
   * @default `oldestEnqueuedAt + maxDelayMs` (a view made without it, e.g. in a test)
   */
  readonly windowEndsAt?: number;
  /** The host's `preferredBatchSizes`, ascending, or `undefined`. */
  readonly preferredBatchSizes?: readonly number[];
  /** The latency budget per request (queue + run), `Infinity` when none is set. */
  readonly maxLatencyMs: number;
  /**
   * The waiting requests in queue order (priority, then FIFO), read as they are iterated: a policy
   * that stops after the head pays only for the head.
   */
  requests(): Iterable<QueuedRequestInfo>;
}

/** What a policy may know about one waiting request (pass it back in `shed` to reject it). */
export interface QueuedRequestInfo {
  /** Clock time it was queued. */
  readonly enqueuedAt: number;
  /** Clock time its `timeoutMs` runs out (`Infinity` if none). */
  readonly deadline: number;
  /** Its rows. */
  readonly rows: number;
  /** Its priority. */
  readonly priority: number;
}

/**
 * A policy's answer: release a batch of at most `maxRows` rows now, or wait. Either way it may
 * shed waiting requests it predicts cannot meet their deadline: the host rejects them with
 * `DeadlineExceededError` (reason `'shed'`) before anything else happens.
 */
export type ReleaseDecision =
  | {
      readonly release: true;
      readonly maxRows: number;
      readonly reason: ReleaseReason;
      /** Requests (from `view.requests()`) to reject now instead of running them. */
      readonly shed?: ReadonlyArray<QueuedRequestInfo>;
    }
  | {
      readonly release: false;
      /** Ask again at this clock time (a new arrival or a finished batch also asks again). */
      readonly wakeAt?: number;
      /** Requests (from `view.requests()`) to reject now instead of running them. */
      readonly shed?: ReadonlyArray<QueuedRequestInfo>;
    };

/** A learned estimate of batch run time, exposed as `host.latencyModel` by policies that learn. */
export interface LatencyModelView {
  /** Predicted run time in milliseconds of a batch of `rows` rows, or `undefined` before any data. */
  predict(rows: number): number | undefined;
}

/** What a finished batch tells a learning policy. */
export interface BatchOutcome {
  /** Rows in the batch. */
  readonly rows: number;
  /** Requests in the batch. */
  readonly requests: number;
  /** Milliseconds the batch function ran (merge and split excluded). */
  readonly runMs: number;
  /** False if the batch function threw. */
  readonly ok: boolean;
}

/**
 * Decides when a batch is released and how big it may be. The host asks only when a request is
 * waiting and a batch slot is free. Implementations must be pure functions of the view (plus their
 * own learned state) so they can be unit tested with a {@link ManualClock}.
 *
 * @example
 * ```ts
 * // Release only full batches, or whatever waits after 20 ms.
 * const patient: ReleasePolicy = {
 *   name: 'patient',
 *   decide: (q) =>
 *     q.queuedRows >= q.maxBatchSize || q.now - q.oldestEnqueuedAt >= 20
 *       ? { release: true, maxRows: q.maxBatchSize, reason: 'timer' }
 *       : { release: false, wakeAt: q.oldestEnqueuedAt + 20 },
 * };
 * ```
 */
export interface ReleasePolicy {
  /** Shown in errors and reports. */
  readonly name: string;
  /**
   * Called with a non-empty queue and at least one free slot. A policy that answers
   * `{ release: false }` without `wakeAt` is asked again only on the next arrival or finished batch.
   */
  decide(view: QueueView): ReleaseDecision;
  /**
   * Told about every request as it joins the queue, before the decision it leads to (policies that
   * measure the arrival rate use it; others may omit it). It lets a policy read only the head of
   * the queue at a decision: finding the new arrivals by reading the whole queue costs time in
   * proportion to the backlog, per batch, and under a backlog that cost is what makes it grow.
   * `queuedRows` counts the rows waiting, this request's included, and `inFlight` the batches
   * running. Answering `false` refuses the request at once, as a shed (a policy that knows it
   * cannot be answered in time says so on arrival, not at its deadline).
   */
  enqueued?(request: QueuedRequestInfo, queuedRows?: number, inFlight?: number): boolean | void;
  /** Told about every finished batch (learning policies use it; others may omit it). */
  observe?(outcome: BatchOutcome): void;
  /**
   * Whether a full batch may go to an executor that holds batches ahead while every slot is busy,
   * as the window policy's do (see `Executor.batchesAhead`): `true` when this policy would release
   * a full batch the moment a slot frees anyway. Asked with a full batch waiting, every slot busy;
   * the batch it lets go ahead is not shown to `decide()`: it counts in `inFlight` (beyond the
   * slots, at `enqueued`) until it ends, and `observe` hears of it like any other. Omitted: never,
   * unless the policy is the window policy itself. The adaptive policy answers `true` under overload.
   *
   * @default never (omitted)
   * @example
   * ```ts
   * // Full batches only, so the next one may wait in a busy worker.
   * const fullOnly: ReleasePolicy = {
   *   name: 'full only',
   *   decide: (q) => (q.queuedRows >= q.maxBatchSize ? { release: true, maxRows: q.maxBatchSize, reason: 'full' } : { release: false }),
   *   goesAhead: () => true,
   * };
   * ```
   */
  goesAhead?(): boolean;
  /** What the policy has learned about run time, if it learns (shown as `host.latencyModel`). */
  readonly latencyModel?: LatencyModelView;
}

/**
 * The default policy: work-conserving. With a free slot and requests waiting it releases at once
 * with everything queued (up to `maxBatchSize` rows). `maxDelayMs > 0` opts into waiting, counted
 * from the oldest waiting request, for a fuller batch; the wait ends early when the batch is full,
 * or when a waiting request's deadline falls inside the window.
 */
export const greedyPolicy: ReleasePolicy = {
  name: 'greedy',
  decide(q: QueueView): ReleaseDecision {
    const maxRows = q.maxBatchSize;
    // Preferred sizes (Triton's rule): the largest one the waiting rows reach goes at once; below
    // the smallest, the window below is spent waiting for it.
    if (q.preferredBatchSizes !== undefined) {
      const rows = Math.min(q.queuedRows, maxRows);
      let best = 0;
      for (const p of q.preferredBatchSizes) if (p <= rows) best = p;
      if (best > 0) return { release: true, maxRows: best, reason: 'full' };
    }
    if (q.queuedRows >= maxRows) return { release: true, maxRows, reason: 'full' };
    if (q.maxDelayMs <= 0) return { release: true, maxRows, reason: 'idle' };
    const windowEnd = q.windowEndsAt ?? q.oldestEnqueuedAt + q.maxDelayMs;
    if (q.now >= windowEnd) return { release: true, maxRows, reason: 'timer' };
    // Waiting past a request's deadline would only fail it: run now instead.
    if (q.earliestDeadline() <= windowEnd) return { release: true, maxRows, reason: 'deadline' };
    return { release: false, wakeAt: windowEnd };
  },
};
