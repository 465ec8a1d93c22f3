import type { Batcher } from './batcher';
import type { Clock } from './clock';
import { systemClock } from './clock';
import { describe } from './describe';
import type { HostObserver } from './observer';
import type { ReleasePolicy } from './policy';
import { greedyPolicy } from './policy';
import { AdaptivePolicy } from './adaptive-policy';

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
   * When to release a batch: `'greedy'` (work-conserving, see {@link greedyPolicy}), `'adaptive'`
   * (learns run time per batch size, sizes batches to meet `maxLatencyMs` and deadlines, sheds
   * what cannot be met; one {@link AdaptivePolicy} per host) or your own {@link ReleasePolicy}.
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

/**
 * The keys of an options type as a list for the unknown-key checks, written as a map with one
 * entry per key so that the compiler fails when the type gains or loses a key. Map order is the
 * order error messages list them in. @internal
 */
export function optionKeys<T>(keys: { readonly [K in keyof T]-?: true }): readonly string[] {
  return Object.keys(keys);
}

/** Every key `HostOptions` knows, for the unknown-key checks of every entry point. @internal */
export const HOST_OPTION_KEYS = optionKeys<HostOptions<unknown, unknown>>({
  maxBatchSize: true,
  maxDelayMs: true,
  maxConcurrentBatches: true,
  maxQueueSize: true,
  timeoutMs: true,
  maxLatencyMs: true,
  batchTimeoutMs: true,
  policy: true,
  batcher: true,
  isolateErrors: true,
  splitOversize: true,
  priorities: true,
  preferredBatchSizes: true,
  warmup: true,
  cache: true,
  name: true,
  observer: true,
  clock: true,
});

/** @internal */
export function fail(where: string, key: string, expected: string, got: unknown, Err = TypeError): never {
  throw new Err(`${where}: expected \`${key}\` to be ${expected}, got ${describe(got)}`);
}

/** An integer from 1 and up (or Infinity when allowed): TypeError for a non-number, RangeError otherwise. @internal */
export function positiveInteger(where: string, key: string, value: unknown, allowInfinity = false): number {
  if (typeof value !== 'number') fail(where, key, 'an integer from 1 and up', value);
  if (allowInfinity && value === Infinity) return value;
  if (!Number.isInteger(value) || value < 1) {
    fail(where, key, `an integer from 1 and up${allowInfinity ? ' (or Infinity)' : ''}`, value, RangeError);
  }
  return value;
}

/** @internal */
export function checkMs(where: string, key: string, value: unknown, min: 'zero' | 'positive'): number {
  const expected = min === 'zero' ? 'a number of milliseconds >= 0' : 'a number of milliseconds > 0 (or Infinity)';
  if (typeof value !== 'number' || Number.isNaN(value)) fail(where, key, expected, value);
  if (min === 'zero' ? value < 0 || value === Infinity : value <= 0) fail(where, key, expected, value, RangeError);
  return value;
}

/** Checks the options `configure()` may change; returns them with defaults filled from `base`. @internal */
export function resolveTunable(where: string, options: Partial<TunableOptions>, base: TunableOptions): Required<TunableOptions> {
  const merged = { ...base, ...stripUndefined(options) } as Required<TunableOptions>;
  return {
    maxBatchSize: positiveInteger(where, 'maxBatchSize', merged.maxBatchSize, false),
    maxDelayMs: checkMs(where, 'maxDelayMs', merged.maxDelayMs, 'zero'),
    maxConcurrentBatches: positiveInteger(where, 'maxConcurrentBatches', merged.maxConcurrentBatches, false),
    maxQueueSize: positiveInteger(where, 'maxQueueSize', merged.maxQueueSize, true),
    timeoutMs: checkMs(where, 'timeoutMs', merged.timeoutMs, 'positive'),
    maxLatencyMs: checkMs(where, 'maxLatencyMs', merged.maxLatencyMs, 'positive'),
    batchTimeoutMs: checkMs(where, 'batchTimeoutMs', merged.batchTimeoutMs, 'positive'),
  };
}

/** The defaults of every optional tunable. @internal */
const TUNABLE_DEFAULTS: Omit<Required<TunableOptions>, 'maxBatchSize'> = {
  maxDelayMs: 0,
  maxConcurrentBatches: 1,
  maxQueueSize: Infinity,
  timeoutMs: Infinity,
  maxLatencyMs: Infinity,
  batchTimeoutMs: Infinity,
};

/** Rejects keys a host does not know, naming the known ones (catches `maxBatchsize` typos). @internal */
export function rejectUnknownKeys(where: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(`${where}: unknown option \`${key}\`; the known options are ${known.map((k) => `\`${k}\``).join(', ')}`);
    }
  }
}

/** Options that {@link resolveOptions} made, so the host built from them does not check them again. */
const resolved = new WeakSet<ResolvedOptions>();

/** True for options made by {@link resolveOptions} (or {@link refineOptions}). @internal */
export function isResolved(options: unknown): options is ResolvedOptions {
  return typeof options === 'object' && options !== null && resolved.has(options as ResolvedOptions);
}

/**
 * Resolved options with values an entry point computed itself (a default name, its own batcher, a
 * concurrency that follows its pool): trusted, so not checked again. @internal
 */
export function refineOptions(options: ResolvedOptions, patch: Partial<ResolvedOptions>): ResolvedOptions {
  const out = { ...options, ...patch };
  resolved.add(out);
  return out;
}

/**
 * Validates host options and fills in defaults: called once per host, by the entry point that
 * received the options (the `ModelHost` constructor when called directly). @internal
 */
export function resolveOptions(where: string, options: unknown): ResolvedOptions {
  if (typeof options === 'number') options = { maxBatchSize: options };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    fail(where, 'options', 'an object with at least `maxBatchSize` (or a number: the maxBatchSize)', options);
  }
  const o = options as HostOptions<unknown, unknown>;
  rejectUnknownKeys(where, o, HOST_OPTION_KEYS);
  if (o.maxBatchSize === undefined) fail(where, 'maxBatchSize', 'an integer from 1 and up (it is required)', undefined);
  const tunable = resolveTunable(where, o, { maxBatchSize: o.maxBatchSize, ...TUNABLE_DEFAULTS });

  let policy: ReleasePolicy = greedyPolicy;
  if (o.policy === 'adaptive') {
    policy = new AdaptivePolicy();
  } else if (o.policy !== undefined && o.policy !== 'greedy') {
    if (typeof o.policy !== 'object' || o.policy === null || typeof (o.policy as ReleasePolicy).decide !== 'function') {
      fail(where, 'policy', "'greedy', 'adaptive' or an object with a decide(view) method", o.policy);
    }
    policy = o.policy;
  }
  if (o.isolateErrors !== undefined && typeof o.isolateErrors !== 'boolean') fail(where, 'isolateErrors', 'a boolean', o.isolateErrors);
  if (o.splitOversize !== undefined && typeof o.splitOversize !== 'boolean') fail(where, 'splitOversize', 'a boolean', o.splitOversize);
  const priorities = o.priorities === undefined ? undefined : resolvePriorities(where, o.priorities);
  const preferredBatchSizes = o.preferredBatchSizes === undefined ? undefined : resolvePreferred(where, o.preferredBatchSizes, tunable.maxBatchSize);
  const warmup = o.warmup === undefined ? undefined : resolveWarmup(where, o.warmup, tunable.maxBatchSize);
  const cache = o.cache === undefined || o.cache === false ? undefined : resolveCache(where, o.cache);
  if (o.name !== undefined && (typeof o.name !== 'string' || o.name === '')) fail(where, 'name', 'a non-empty string', o.name);
  if (o.observer !== undefined && (typeof o.observer !== 'object' || o.observer === null)) {
    fail(where, 'observer', 'an object with optional onBatch/onRequest methods', o.observer);
  }
  const clock = o.clock ?? systemClock;
  if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function' || typeof clock.setTimer !== 'function' || typeof clock.clearTimer !== 'function') {
    fail(where, 'clock', 'an object with now(), setTimer() and clearTimer()', o.clock);
  }
  if (o.batcher !== undefined) {
    const b = o.batcher as Partial<Batcher<unknown, unknown>> | null;
    if (typeof b !== 'object' || b === null || typeof b.merge !== 'function' || typeof b.split !== 'function') {
      fail(where, 'batcher', 'an object with merge(items) and split(output, ctx) methods', o.batcher);
    }
  }
  const out: ResolvedOptions = {
    ...tunable,
    policy,
    batcher: o.batcher,
    isolateErrors: o.isolateErrors ?? false,
    splitOversize: o.splitOversize ?? false,
    priorities,
    preferredBatchSizes,
    warmup,
    cache,
    name: o.name ?? 'microbatch',
    observer: o.observer,
    clock,
  };
  resolved.add(out);
  return out;
}

const LEVEL_KEYS = optionKeys<PriorityLevelOptions>({ timeoutMs: true, maxDelayMs: true });

/** Checks `priorities`: keys are finite numbers, values `{ timeoutMs?, maxDelayMs? }`. @internal */
function resolvePriorities(where: string, value: unknown): Map<number, PriorityLevelOptions> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(where, 'priorities', 'an object keyed by priority level, e.g. { 1: { maxDelayMs: 0, timeoutMs: 200 } }', value);
  }
  const out = new Map<number, PriorityLevelOptions>();
  for (const [key, level] of Object.entries(value)) {
    const priority = Number(key);
    if (key.trim() === '' || !Number.isFinite(priority)) fail(where, 'priorities', 'keyed by priority levels (finite numbers)', key);
    const at = `priorities[${key}]`;
    if (typeof level !== 'object' || level === null || Array.isArray(level)) fail(where, at, 'an object { timeoutMs?, maxDelayMs? }', level);
    rejectUnknownKeys(`${where}: ${at}`, level, LEVEL_KEYS);
    const l = level as PriorityLevelOptions;
    out.set(priority, {
      ...(l.timeoutMs === undefined ? {} : { timeoutMs: checkMs(where, `${at}.timeoutMs`, l.timeoutMs, 'positive') }),
      ...(l.maxDelayMs === undefined ? {} : { maxDelayMs: checkMs(where, `${at}.maxDelayMs`, l.maxDelayMs, 'zero') }),
    });
  }
  return out;
}

/** Checks `preferredBatchSizes`: integers from 1 to `maxBatchSize`; returns them ascending, without repeats. @internal */
function resolvePreferred(where: string, value: unknown, maxBatchSize: number): number[] {
  if (!Array.isArray(value) || value.length === 0) fail(where, 'preferredBatchSizes', 'a non-empty array of batch sizes', value);
  for (const n of value) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > maxBatchSize) {
      fail(where, 'preferredBatchSizes', `batch sizes from 1 to maxBatchSize (${maxBatchSize})`, n, RangeError);
    }
  }
  return [...new Set(value as number[])].sort((a, b) => a - b);
}

const CACHE_KEYS = optionKeys<CacheOptions<unknown>>({ maxEntries: true, ttlMs: true, key: true });

/** Checks `cache`: `true` or `{ maxEntries?, ttlMs?, key? }`. @internal */
function resolveCache(where: string, value: unknown): NonNullable<ResolvedOptions['cache']> {
  if (value === true) return { maxEntries: 1000, ttlMs: Infinity, key: undefined };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'cache', 'true, or an object { maxEntries?, ttlMs?, key? }', value);
  rejectUnknownKeys(`${where}: cache`, value, CACHE_KEYS);
  const c = value as CacheOptions<unknown>;
  const maxEntries = c.maxEntries ?? 1000;
  if (typeof maxEntries !== 'number' || !(Number.isInteger(maxEntries) || maxEntries === Infinity) || maxEntries < 0) {
    fail(where, 'cache.maxEntries', 'an integer >= 0 (or Infinity)', maxEntries, RangeError);
  }
  const ttlMs = c.ttlMs === undefined ? Infinity : c.ttlMs === Infinity ? Infinity : checkMs(where, 'cache.ttlMs', c.ttlMs, 'zero');
  if (c.key !== undefined && typeof c.key !== 'function') fail(where, 'cache.key', 'a function (item) => key', c.key);
  return { maxEntries, ttlMs, key: c.key };
}

const WARMUP_KEYS = optionKeys<WarmupOptions<unknown>>({ samples: true, batchSizes: true });

/** The default warm-up batch sizes: 1, the powers of 2 below `maxBatchSize`, and `maxBatchSize`. @internal */
export function defaultWarmupSizes(maxBatchSize: number): number[] {
  const sizes: number[] = [];
  for (let n = 1; n < maxBatchSize; n *= 2) sizes.push(n);
  sizes.push(maxBatchSize);
  return sizes;
}

/** Checks `warmup`; fills in the default batch sizes. @internal */
function resolveWarmup(where: string, value: unknown, maxBatchSize: number): { samples: readonly unknown[]; batchSizes: readonly number[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'warmup', 'an object { samples, batchSizes? }', value);
  rejectUnknownKeys(`${where}: warmup`, value, WARMUP_KEYS);
  const w = value as WarmupOptions<unknown>;
  if (!Array.isArray(w.samples) || w.samples.length === 0) fail(where, 'warmup.samples', 'a non-empty array of requests', w.samples);
  let sizes: number[];
  if (w.batchSizes === undefined) {
    sizes = defaultWarmupSizes(maxBatchSize);
  } else {
    if (!Array.isArray(w.batchSizes) || w.batchSizes.length === 0) fail(where, 'warmup.batchSizes', 'a non-empty array of batch sizes', w.batchSizes);
    for (const n of w.batchSizes) {
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > maxBatchSize) {
        fail(where, 'warmup.batchSizes', `batch sizes from 1 to maxBatchSize (${maxBatchSize})`, n, RangeError);
      }
    }
    sizes = [...(w.batchSizes as number[])];
  }
  return { samples: [...w.samples], batchSizes: sizes };
}

/** A copy without the keys whose value is `undefined` (so they do not override defaults). @internal */
export function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
