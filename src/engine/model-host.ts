// The hot path, read top to bottom: inference → schedule (flush-scheduler.ts) → decide and take
// (release-loop.ts) → run (batch-run.ts) → settle (settlement.ts). What composes around it lives
// beside it: the response cache and splitOversize wrap the submit path, the warm-up and reload
// prepare executors (warmup.ts, reload.ts), the lifecycle (lifecycle.ts) and the request watch
// (admission.ts) are shared with the generation host.
import { ListBatcher } from '../batchers/list-batcher';
import type { Batcher } from '../core/batcher';
import { toError } from '../core/describe';
import { QueueFullError } from '../core/errors';
import type { HostOptions, RequestOptions, ResolvedOptions, TunableOptions } from '../core/options';
import { fail, isResolved, rejectUnknownKeys, resolveOptions, resolveTunable } from '../core/options';
import { greedyPolicy, type LatencyModelView } from '../core/policy';
import type { Servable } from '../core/servable';
import { toExecutor, type BatchFunction, type Executor, type ReloadTarget } from '../executors/executor';
import { BurstClock } from './burst-clock';
import { FlushScheduler } from './flush-scheduler';
import type { ExecutorSwap, ReloadOptions } from './executor-swap';
import { Lifecycle, type StopOptions } from './lifecycle';
import { PlainLane } from './plain-lane';
import { Reloader } from './reload';
import { Reporter } from './reporting';
import { PendingRequest, RequestExtras } from './request';
import { RequestQueue } from './request-queue';
import { ResponseCache, type CacheFront } from './response-cache';
import { abortedBefore, hostStopped, stoppedBefore, tooManyRows } from './settle-errors';
import { Settlement } from './settlement';
import { oversizeSplitter } from './split-oversize';
import type { HostStats } from './stats';
import { prepareExecutor } from './warmup';

export type { HostStats } from './stats';
export type { StopOptions } from './lifecycle';

// One executor for every request's promise: it hands out resolve/reject through these two slots
// (the executor runs synchronously), so no closure is allocated per request. Measured: ~20 ns
// (9%) less CPU per request in the overhead scenario (docs/performance.md, "The shared promise
// executor").
let nextResolve: (value: unknown) => void = () => undefined;
let nextReject: (error: Error) => void = () => undefined;
const capture = (res: (value: unknown) => void, rej: (error: Error) => void): void => {
  nextResolve = res;
  nextReject = rej;
};

/**
 * The batching engine. Callers send one item at a time with {@link ModelHost.inference}; the host
 * queues them, releases batches according to its policy, runs the batch function once per batch,
 * splits the output and settles every caller with its own result or error, exactly once.
 *
 * The batch function's contract (with the default {@link ListBatcher}): given an array of items,
 * return (a promise of) an array of the same length whose entry `i` is item `i`'s result, or an
 * `Error` that rejects only that caller. Throwing rejects the whole batch (see `isolateErrors`).
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 * @typeParam Batch - what the batch function receives (with a custom batcher).
 * @typeParam BatchOut - what the batch function returns (with a custom batcher).
 *
 * @example
 * ```ts
 * const host = new ModelHost(async (texts: readonly string[]) => model.score(texts), { maxBatchSize: 32 });
 * const score = await host.inference('great movie'); // batched with concurrent callers
 * await host.stop();
 * ```
 */
export class ModelHost<In, Out, Batch = unknown, BatchOut = unknown> implements Servable<In, Out>, AsyncDisposable {
  #o: ResolvedOptions;
  readonly #model: Reloader<Batch, BatchOut>;
  readonly #rowsOf: ((item: In) => number) | undefined;
  /** With `splitOversize`: runs a request too large for one batch as parts, back through `#submit`. */
  readonly #oversize: ((item: In, rows: number, maxRows: number, options: RequestOptions | undefined) => Promise<Out>) | undefined;
  /** With `cache`: identical requests share an answer (it composes around `#submit`). */
  readonly #cache: ResponseCache<In, Out> | undefined;
  readonly #cacheFront: CacheFront<In, Out> = {
    refusal: (options) => (this.#life.stopping ? this.#refuseStopped() : options === undefined ? undefined : this.#s.refuseBad(options)),
    submit: (item, options) => this.#submit(item, options),
  };
  /** The batch slots, the counters and the settling: what a batch run uses instead of the host. */
  readonly #s: Settlement<In, Out>;
  readonly #queue = new RequestQueue<PendingRequest<In, Out>>();
  /**
   * Plain requests (no per-request options), queued without a request object, when nothing about
   * the host can need one: the greedy policy (it never sheds or reads requests), every item one
   * row, no priority levels, no observer context per request. Invariant: the lane holds requests
   * only while the queue holds none (a request that needs an object moves the lane into the queue
   * first), so FIFO order holds across both.
   */
  readonly #lane = new PlainLane<In, Out>();
  readonly #laneOk: boolean;
  /** `#laneOk`, and nothing else stands in a plain request's way: one read per request. */
  #laneOpen = false;

  readonly #life: Lifecycle;

  /** When the release loop runs (flush-scheduler.ts). */
  readonly #flow: FlushScheduler<In, Out>;
  readonly #now: BurstClock;

  /**
   * @param batchFn - the batch function, or an {@link Executor} that runs it.
   * @param options - limits and behaviour; a number is shorthand for `{ maxBatchSize }`.
   */
  constructor(
    batchFn: BatchFunction<readonly In[], ReadonlyArray<Out | Error>> | Executor<readonly In[], ReadonlyArray<Out | Error>>,
    options: number | (HostOptions<In, Out> & { batcher?: ListBatcher<In, Out> }),
  );
  constructor(
    batchFn: BatchFunction<Batch, BatchOut> | Executor<Batch, BatchOut>,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
    options: HostOptions<In, Out, Batch, BatchOut> & { batcher: Batcher<In, Out, Batch, BatchOut, any> },
  );
  constructor(batchFn: unknown, options: unknown) {
    // Name errors after the host when it has a usable name (a Proxy passes its class name).
    const named = (options as { name?: unknown } | null)?.name;
    const where = typeof named === 'string' && named !== '' ? named : new.target.name;
    // Entry points that checked the options already (createHost, createOnnxHost) hand them resolved.
    const o = (this.#o = isResolved(options) ? options : resolveOptions(where, options));
    this.#life = new Lifecycle(o.name, () => this.#queued() === 0 && this.#s.inFlight === 0);
    this.#model = new Reloader(toExecutor<Batch, BatchOut>(where, batchFn, 'as the first argument'), {
      name: o.name,
      stopping: () => this.#life.stopping,
      start: () => this.start(),
      prepare: (executor) => prepareExecutor(executor, this.#s),
      // A new model serves: the cache gives nothing of the old one; release what waits.
      swapped: () => {
        this.#cache?.newModel();
        this.#flow.batchesAhead = this.#model.executors.current.batchesAhead ?? 0;
        this.#flow.schedule();
      },
    });
    const batcher = (o.batcher ?? new ListBatcher<In, Out>()) as Batcher<In, Out, Batch, BatchOut>;
    this.#rowsOf = batcher.rows?.bind(batcher);
    const cache = o.cache;
    if (cache !== undefined) this.#cache = new ResponseCache<In, Out>({ maxEntries: cache.maxEntries, ttlMs: cache.ttlMs, key: cache.key as ((item: In) => unknown) | undefined }, o.clock, o.name);
    if (o.splitOversize) this.#oversize = oversizeSplitter(o.name, batcher, (part, opts) => this.#submit(part, opts));
    this.#now = new BurstClock(o.clock);
    const reporter = new Reporter(o.name, o.observer, () => o.clock.now());
    const executors = this.#model.executors as ExecutorSwap<unknown, unknown>;
    this.#s = new Settlement<In, Out>(o, reporter, executors, batcher as Batcher<In, Out, unknown, unknown>, this.#queue, this.#lane, {
      slotFreed: (blocked) => this.#flow.slotFreed(blocked),
      left: () => this.#life.notifyIdle(),
    });
    this.#flow = new FlushScheduler(this.#s, this.#queue, this.#lane, this.#life, () => this.start());
    this.#flow.batchesAhead = this.#model.executors.current.batchesAhead ?? 0;
    this.#laneOk = o.policy === greedyPolicy && this.#rowsOf === undefined && o.priorities === undefined && !reporter.captures;
    this.#updateLane();
  }

  /** The host's name (the `name` option). */
  get name(): string {
    return this.#o.name;
  }

  /**
   * The version of the model serving now: `'1'` at first, then what each completed `reload()`
   * named (`reload(next, { version })`), by default the count of models served so far (`'2'`,
   * `'3'`...). The HTTP server reports it as the model's version.
   * @default '1'
   */
  get version(): string {
    return this.#model.version;
  }

  /** The executor serving now (after a reload, the new one): what a subclass shows its model from. */
  protected get servingExecutor(): Executor<Batch, BatchOut> {
    return this.#model.executors.current;
  }

  /** Current limits (after `configure()`). */
  get options(): Readonly<Required<TunableOptions>> {
    const { maxBatchSize, maxDelayMs, maxConcurrentBatches, maxQueueSize, timeoutMs, maxLatencyMs, batchTimeoutMs } = this.#o;
    return { maxBatchSize, maxDelayMs, maxConcurrentBatches, maxQueueSize, timeoutMs, maxLatencyMs, batchTimeoutMs };
  }

  /** What the release policy has learned about run time (`undefined` for policies that do not learn). */
  get latencyModel(): LatencyModelView | undefined {
    return this.#o.policy.latencyModel;
  }

  /** A snapshot of the host's counters. */
  get stats(): HostStats {
    const s = this.#s.stats.snapshot(this.#queued(), this.#s.runningRequests, this.#s.inFlight);
    return this.#cache === undefined ? s : { ...s, cache: this.#cache.stats };
  }

  /**
   * Submits one item and resolves with its own result once the batch it joins has run. Never
   * throws synchronously: every failure is a rejection (`QueueFullError`, `DeadlineExceededError`,
   * `AbortError`, `HostStoppedError`, `BatchSizeMismatchError`, `RangeError` for too many rows, or
   * the model's own error).
   *
   * @example
   * ```ts
   * const y = await host.inference(x, { timeoutMs: 100, priority: 1, signal: req.signal });
   * ```
   */
  inference(item: In, options?: RequestOptions): Promise<Out> {
    // Kept small so that callers' code can inline it: everything but the plain lane is a call away.
    if (options === undefined && this.#laneOpen && this.#queue.size === 0 && this.#lane.size < this.#o.maxQueueSize) {
      const promise = new Promise<Out>(capture as (res: (value: Out) => void, rej: (error: Error) => void) => void);
      const lane = this.#lane;
      // Once per burst on the real clock (it caches the reading), per call on an injected one.
      const clock = this.#now;
      if (!clock.cached) lane.stamp(clock.now());
      lane.push(item, nextResolve, this.#o.maxBatchSize);
      this.#flow.schedule();
      return promise;
    }
    return this.#cache === undefined ? this.#submit(item, options) : this.#cache.run(item, options, this.#cacheFront);
  }

  /** Queues one request (what `inference()` does, past the cache). */
  #submit(item: In, options?: RequestOptions): Promise<Out> {
    if (this.#life.stopping) return this.#refuseStopped();
    if (this.#life.state === 'failed') return Promise.reject(this.#life.startError);
    const o = this.#o;
    let rows = 1;
    if (this.#rowsOf !== undefined) {
      try {
        rows = this.#rowsOf(item);
      } catch (e) {
        return this.#s.refuse(toError(e, "The batcher's rows"), 'error');
      }
      if (!Number.isInteger(rows) || rows < 1 || rows > o.maxBatchSize) {
        if (this.#oversize !== undefined && Number.isInteger(rows) && rows > o.maxBatchSize) return this.#oversize(item, rows, o.maxBatchSize, options);
        return this.#s.refuse(tooManyRows(o.name, o.maxBatchSize, rows), 'error');
      }
    }
    let priority = 0;
    let timeoutMs = o.timeoutMs;
    let signal: AbortSignal | undefined;
    if (options !== undefined) {
      const bad = this.#s.refuseBad(options);
      if (bad !== undefined) return bad;
      if (options.priority !== undefined) priority = options.priority;
      if (options.timeoutMs !== undefined) timeoutMs = options.timeoutMs;
      signal = options.signal;
      if (signal?.aborted) return this.#s.refuse(abortedBefore(o.name, signal.reason), 'aborted');
    }
    // A level's default time limit, unless the request set its own (no options: level 0).
    if (o.priorities !== undefined && options?.timeoutMs === undefined) timeoutMs = o.priorities.get(priority)?.timeoutMs ?? timeoutMs;
    if (this.#queued() >= o.maxQueueSize) return this.#s.refuse(new QueueFullError(o.name, o.maxQueueSize), 'queue-full');

    const now = this.#now.now();
    const promise = new Promise<Out>(capture as (res: (value: Out) => void, rej: (error: Error) => void) => void);
    const req = new PendingRequest<In, Out>(item, rows, now, nextResolve, nextReject);
    // Read from the options, not through the reporter: this is the per-request path.
    const captures = o.observer?.captureContext !== undefined;
    if (timeoutMs !== Infinity || signal !== undefined || priority !== 0 || captures) {
      const x = (req.extras = new RequestExtras(priority, now + timeoutMs, captures ? this.#s.reporter.capture() : undefined));
      x.arm(o.clock, timeoutMs, () => this.#s.expired(req), signal, () => this.#s.aborted(req));
    }
    // The lane moves into the queue, in order, before a request that needs an object joins it.
    if (this.#lane.size > 0) this.#lane.spill(this.#queue);
    this.#queue.push(req);
    if (o.policy.enqueued?.(req, this.#queue.rows, this.#s.inFlight) === false) this.#s.shed([req]); // refused on arrival
    else this.#flow.schedule();
    return promise;
  }

  /**
   * Replaces the model without stopping: `next` (a batch function or an executor) starts and runs
   * the warm-up beside the current one while requests keep being served; once it is ready, batches
   * released from then on run on it, batches already running finish on the old one and deliver,
   * and the old one is then stopped. No request is lost or answered twice. If `next` fails to start
   * or warm up, it is stopped, the current model keeps serving, and `reload()` rejects with the
   * failure as `cause`. Reloads run one at a time, in call order. Once it resolves,
   * {@link ModelHost.version} is the new model's.
   *
   * @param options.version - the new model's version label.
   *   @default the count of models served so far, as a string (`'2'` for the first reload)
   *
   * @example
   * ```ts
   * await host.reload(async (xs) => newModel.predict(xs), { version: '2024-06-01' });
   * ```
   */
  reload(
    next?: ReloadTarget<Batch, BatchOut> | ReloadTarget<readonly In[], ReadonlyArray<Out | Error>> | ReloadOptions,
    options: ReloadOptions = {},
  ): Promise<void> {
    return this.#model.reload(next, options);
  }

  /** Alias of {@link ModelHost.inference}. */
  predict(item: In, options?: RequestOptions): Promise<Out> {
    return this.inference(item, options);
  }

  /**
   * Prepares the executor (loads the model, starts workers). Idempotent; the host also starts by
   * itself on the first request, so calling it is only needed to fail early or to warm up.
   */
  start(): Promise<void> {
    const life = this.#life;
    const begin = (): Promise<void> => prepareExecutor(this.#model.executors.current as Executor<unknown, unknown>, this.#s);
    return life.start(begin, "The executor's start", () => this.#flow.schedule(), () => {
      this.#updateLane();
      this.#s.rejectQueued(() => life.startError as Error, 'error');
      life.notifyIdle();
    });
  }

  /**
   * Changes limits while running; they apply from the next batch. Lowering `maxBatchSize` rejects
   * queued requests that no longer fit with a `RangeError`.
   *
   * @example
   * ```ts
   * host.configure({ maxBatchSize: 64, maxDelayMs: 2 });
   * ```
   */
  configure(options: Partial<TunableOptions>): void {
    const where = `${this.#o.name}.configure`;
    if (options === null || typeof options !== 'object') fail(where, 'options', 'an object', options);
    rejectUnknownKeys(where, options, Object.keys(this.options));
    this.#o = this.#s.reconfigure({ ...this.#o, ...resolveTunable(where, options, this.options) });
    this.#updateLane();
    this.#flow.wake.clear();
    this.#flow.schedule();
  }

  /** Resolves when nothing is queued or running (at once if already so). */
  onIdle(): Promise<void> {
    return this.#life.onIdle();
  }

  /**
   * Stops the host. New calls reject with `HostStoppedError` at once. With `drain: true` (the
   * default) every accepted request is answered first; with `drain: false` queued requests reject
   * with `HostStoppedError`. Running batches always finish and deliver. Resolves once the last
   * batch is done and the executor has stopped. Calling it again returns the same promise (a later
   * `drain: false` still rejects what is queued).
   */
  stop(options: StopOptions = {}): Promise<void> {
    const life = this.#life;
    const abandon = (): void => {
      this.#updateLane();
      this.#s.rejectQueued(() => stoppedBefore(this.#o.name, 'request'), 'stopped');
      this.#flow.wake.clear();
    };
    const stopped = life.stop(options, abandon, async () => {
      this.#flow.wake.clear();
      if (life.state === 'new') return;
      await life.settled();
      await this.#model.settled();
      await this.#model.executors.current.stop?.();
    });
    this.#updateLane();
    this.#flow.schedule(); // what is queued drains
    return stopped;
  }

  /** `await using host = new ModelHost(...)` stops (draining) at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * Whether a call without options may take the plain lane: the host's settings allow it (see
   * `#lane`), no cache answers first, no default time limit needs a timer, and the host takes
   * requests. Kept as one flag because `inference()` reads it per request.
   */
  #updateLane(): void {
    this.#laneOpen = this.#laneOk && this.#cache === undefined && this.#o.timeoutMs === Infinity && !this.#life.stopping && this.#life.state !== 'failed';
  }

  /** Requests waiting, in the queue and in the plain lane. */
  #queued(): number {
    return this.#queue.size + this.#lane.size;
  }

  #refuseStopped(): Promise<never> {
    return this.#s.refuse(hostStopped(this.#o.name, true), 'stopped');
  }
}
