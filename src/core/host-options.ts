import type { Batcher } from './batcher';
import type { Clock } from './clock';
import type { HostObserver } from './observer';
import type { ReleasePolicy } from './policy';

/**
 * Options shared by every entry point (`ModelHost`, `Proxy`, `@batching`, `createHost`). Only
 * `maxBatchSize` is required.
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 * @typeParam Batch - what the batch function receives (an array of inputs by default).
 * @typeParam BatchOut - what the batch function returns (an array of results by default).
 */
export interface HostOptions<In, Out, Batch = readonly In[], BatchOut = ReadonlyArray<Out | Error>> {
  /**
   * Most rows in one batch. Rows, not requests: a request that carries several rows (see the
   * batcher's `rows`) counts all of them, and one with more rows than this is rejected.
   * @example `maxBatchSize: 32`
   */
  maxBatchSize: number;
  /**
   * How long a free model may wait for a fuller batch, counted from the oldest waiting request and
   * never restarted by later arrivals. `0` never waits for a timer: a lone request runs at once, and
   * a backlog still drains in full batches.
   * @default 0
   */
  maxDelayMs?: number;
  /**
   * Batches that may run at the same time (an inline model usually wants 1; a pool of N workers, N).
   * The groups of a batch that its batcher partitions (shapes, length buckets) also run at the
   * same time on slots that are free when the batch starts, and one after another otherwise.
   * @default 1
   */
  maxConcurrentBatches?: number;
  /**
   * Most requests waiting in the queue (not counting running ones). Past it `inference()` rejects
   * at once with `QueueFullError`.
   * @default Infinity
   */
  maxQueueSize?: number;
  /**
   * Default per-request time limit in milliseconds, from `inference()` to the answer. A request
   * still queued when it elapses leaves the queue; one already running is rejected and its result
   * discarded. Each call may override it. `Infinity` means no limit.
   * @default Infinity
   */
  timeoutMs?: number;
  /**
   * Latency budget per request, queue wait plus run time, used by policies that predict run time
   * (`policy: 'adaptive'`): they size batches to meet it and shed requests that cannot. It is a
   * target, not a timeout: a request that runs late still gets its result. `Infinity` means none.
   * @default Infinity
   */
  maxLatencyMs?: number;
  /**
   * Time limit for one batch function call. When it elapses the batch's requests are rejected with
   * `DeadlineExceededError` (reason `'batch-timeout'`), the slot is freed, and a late result is
   * ignored. `Infinity` means no limit.
   * @default Infinity
   */
  batchTimeoutMs?: number;
  /**
   * When to release a batch: `'greedy'` (work-conserving, see {@link microbatch!greedyPolicy}), `'adaptive'`
   * (learns run time per batch size, sizes batches to meet `maxLatencyMs` and deadlines, sheds
   * what cannot be met; one {@link microbatch!AdaptivePolicy} per host) or your own {@link ReleasePolicy}.
   * @default 'greedy'
   */
  policy?: 'greedy' | 'adaptive' | ReleasePolicy;
  /**
   * How requests are merged into the batch function's input and its output split back.
   * @default new ListBatcher()
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  batcher?: Batcher<In, Out, Batch, BatchOut, any>;
  /**
   * When the batch function throws, re-run the batch in halves to find the items that fail alone,
   * reject only those, and answer the rest. The batch function must then be free of side effects,
   * since good items run more than once.
   * @default false
   */
  isolateErrors?: boolean;
  /**
   * A request with more rows than `maxBatchSize` is cut into parts of at most `maxBatchSize` rows
   * (the batcher's `sliceRows`), which queue one after another and run in as many batches; the
   * caller gets the parts' results joined in order (`joinRows`). An error in any part rejects the
   * request once, and cancels the parts not yet run. Needs a batcher that has both methods
   * (`ConcatBatcher` does). Without it such a request is refused with a `RangeError`.
   * @default false
   */
  splitOversize?: boolean;
  /**
   * Queue policy per priority level, keyed by the `priority` that requests pass (Triton's
   * `priority_queue_policy`): a level's `timeoutMs` is the default time limit of its requests (a
   * request's own `timeoutMs` still wins), and its `maxDelayMs` is its own batching window,
   * counted from its oldest waiting request. A batch is released when the first level's window
   * ends, and takes requests in priority order as always. Levels not listed use the host's.
   * @default every level uses the host's `timeoutMs` and `maxDelayMs`
   * @example
   * ```ts
   * // interactive traffic (priority 1) goes at once and fails fast; bulk (0) waits for full batches
   * { priorities: { 1: { maxDelayMs: 0, timeoutMs: 200 }, 0: { maxDelayMs: 20, timeoutMs: 60_000 } } }
   * ```
   */
  priorities?: { readonly [priority: number]: PriorityLevelOptions };
  /**
   * Batch sizes (in rows) the model runs best at, e.g. sizes it was compiled or padded for. When
   * enough rows wait for one of them, the largest such size is released at once (even if more
   * rows wait: the rest go next); when fewer rows wait than the smallest, the batching window
   * (`maxDelayMs`) is spent waiting for it, and when it closes whatever waits is released. Used by
   * the greedy policy; the adaptive policy ignores it.
   * @default none (any size up to `maxBatchSize`)
   */
  preferredBatchSizes?: readonly number[];
  /**
   * Batches to run before the host takes traffic: `start()` (and so `createHost`,
   * `createOnnxHost`, a server's readiness) resolves only after each has run, so the first real
   * requests do not pay the model's first-run costs (memory arenas, kernel selection, JIT). A
   * batch of each size in `batchSizes` is built by cycling through `samples`. Warm-up batches are
   * reported to the observer (reason `'warmup'`) but not counted in `stats` nor taught to the
   * adaptive policy; requests that arrive meanwhile wait. A warm-up batch that fails (throws, or
   * answers any sample with an Error) fails `start()` with that error as `cause`.
   * @default none
   * @example
   * ```ts
   * { warmup: { samples: [exampleInput], batchSizes: [1, 8, 32] } }
   * ```
   */
  warmup?: WarmupOptions<In>;
  /**
   * A response cache: requests with the same key that are waiting or running share one
   * computation, and finished results are kept and answered at once (DataLoader's cache, Triton's
   * response cache). Errors are never kept. `true` takes the defaults. Use it only for a model
   * that answers an input the same way every time. Counts appear in `host.stats.cache`.
   * @default off
   * @example
   * ```ts
   * { cache: { maxEntries: 10_000, ttlMs: 60_000 } }
   * { cache: { key: (req) => req.id } }
   * ```
   */
  cache?: boolean | CacheOptions<In>;
  /**
   * Name used in error messages and reports.
   * @default 'microbatch'
   */
  name?: string;
  /**
   * Receives a report for every batch and every request.
   * @default none
   */
  observer?: HostObserver;
  /**
   * Source of time, injectable for tests.
   * @default systemClock
   */
  clock?: Clock;
}

/** Options of the response cache (see {@link HostOptions.cache}). */
export interface CacheOptions<In> {
  /**
   * Finished results kept; past it the least recently used goes first. `0` keeps none (identical
   * requests in flight still share one computation).
   * @default 1000
   */
  maxEntries?: number;
  /**
   * How long a finished result is kept, in milliseconds.
   * @default Infinity
   */
  ttlMs?: number;
  /**
   * The key of a request: requests with equal keys (as `Map` keys compare) share an answer.
   * @default strings, numbers, booleans and bigints as themselves; typed arrays, `ArrayBuffer`s,
   * tensors (`{ type, data, dims }`) and arrays or plain objects of them by content (a hash, with
   * the bytes compared on a hit); anything else is refused with a `TypeError` asking for `key`
   */
  key?: (item: In) => unknown;
}

/** Warm-up batches run by `start()` (see {@link HostOptions.warmup}). */
export interface WarmupOptions<In> {
  /** Requests to build the warm-up batches from, cycled through to fill each batch. */
  readonly samples: readonly In[];
  /**
   * Batch sizes, in requests, to run once each, in order.
   * @default 1, the powers of 2 below `maxBatchSize`, and `maxBatchSize`
   */
  readonly batchSizes?: readonly number[];
}

/** The queue policy of one priority level (see {@link HostOptions.priorities}). */
export interface PriorityLevelOptions {
  /**
   * Default time limit of this level's requests, in milliseconds.
   * @default the host's `timeoutMs`
   */
  timeoutMs?: number;
  /**
   * This level's batching window, counted from its oldest waiting request.
   * @default the host's `maxDelayMs`
   */
  maxDelayMs?: number;
}

/** Options of one `inference()` call. */
export interface RequestOptions {
  /** Aborting it rejects the request with `AbortError` (cause: `signal.reason`). */
  signal?: AbortSignal;
  /**
   * Time limit for this request in milliseconds, overriding the host's `timeoutMs`.
   * @default the host's `timeoutMs`
   */
  timeoutMs?: number;
  /**
   * Larger numbers run first; FIFO within a level.
   * @default 0
   */
  priority?: number;
}

/**
 * The options a host can change while it runs (`host.configure()`); they apply from the next batch.
 */
export type TunableOptions = Pick<
  HostOptions<unknown, unknown>,
  'maxBatchSize' | 'maxDelayMs' | 'maxConcurrentBatches' | 'maxQueueSize' | 'timeoutMs' | 'maxLatencyMs' | 'batchTimeoutMs'
>;

/** Options after defaults and validation. @internal */
export interface ResolvedOptions {
  maxBatchSize: number;
  maxDelayMs: number;
  maxConcurrentBatches: number;
  maxQueueSize: number;
  timeoutMs: number;
  maxLatencyMs: number;
  batchTimeoutMs: number;
  policy: ReleasePolicy;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  batcher: Batcher<any, any, any, any, any> | undefined;
  isolateErrors: boolean;
  splitOversize: boolean;
  /** Per-level overrides, `undefined` when none were given (the hot path checks only that). */
  priorities: ReadonlyMap<number, Readonly<PriorityLevelOptions>> | undefined;
  /** Ascending, `undefined` when none were given. */
  preferredBatchSizes: readonly number[] | undefined;
  /** The cache's settings, `undefined` when off. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the key function's item type is the host's In
  cache: { readonly maxEntries: number; readonly ttlMs: number; readonly key: ((item: any) => unknown) | undefined } | undefined;
  /** The samples and the batch sizes to run, `undefined` when none were given. */
  warmup: { readonly samples: readonly unknown[]; readonly batchSizes: readonly number[] } | undefined;
  name: string;
  observer: HostObserver | undefined;
  clock: Clock;
}
