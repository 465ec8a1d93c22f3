// Over 400 lines on purpose: this file is the hot path read top to bottom (inference → schedule →
// decide → take → run → settle) plus the lifecycle that guards it, all on one class's private
// state. Stats, reporting, the queue view, the batch run, the wake timer, the settle errors and
// the request checks live beside it.
import { ListBatcher } from '../batchers/list-batcher';
import type { Batcher } from '../core/batcher';
import { systemClock } from '../core/clock';
import { describe, isError, toError } from '../core/describe';
import { AbortError, HostStoppedError, QueueFullError } from '../core/errors';
import type { RequestOutcome } from '../core/observer';
import type { HostOptions, RequestOptions, ResolvedOptions, TunableOptions } from '../core/options';
import { fail, isResolved, rejectUnknownKeys, resolveOptions, resolveTunable } from '../core/options';
import { greedyPolicy, type LatencyModelView, type QueuedRequestInfo, type ReleaseDecision, type ReleaseReason } from '../core/policy';
import { toExecutor, type BatchFunction, type Executor, type ReloadTarget } from '../executors/executor';
import { runBatch, type BatchRunHost, type ReleasedBatch } from './batch-run';
import { LaneBatch, PlainLane, type Settle } from './plain-lane';
import type { PipelineConfig } from './pipeline';
import { LiveQueueView } from './queue-view';
import { Reporter } from './reporting';
import { PendingRequest, RequestBatch, RequestExtras, RequestState } from './request';
import { checkRequestOptions } from './request-options';
import { runInParts, type RowSlicer } from './split-oversize';
import { runWarmup, type WarmupHost } from './warmup';
import { ResponseCache } from './response-cache';
import { checkReloadOptions, ExecutorSwap, type ReloadOptions } from './executor-swap';
import { RequestQueue } from './request-queue';
import { abortedQueued, abortedRunning, shedByPrediction, timedOutQueued, timedOutRunning } from './settle-errors';
import { StatsCounters, type HostStats } from './stats';
import { WakeTimer } from './wake-timer';

export type { HostStats } from './stats';

/** Options of {@link ModelHost.stop}. */
export interface StopOptions {
  /**
   * `true`: answer every accepted request first. `false`: reject queued requests with
   * `HostStoppedError` (running batches still finish and deliver).
   * @default true
   */
  drain?: boolean;
}

type Lifecycle = 'new' | 'starting' | 'ready' | 'failed';

const resolved = Promise.resolve();
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
// Once per process: a policy that throws per decision would otherwise flood stderr.
let warnedPolicy = false;

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
export class ModelHost<In, Out, Batch = unknown, BatchOut = unknown> implements AsyncDisposable {
  #o: ResolvedOptions;
  readonly #executors: ExecutorSwap<Batch, BatchOut>;
  #reloading: Promise<void> = resolved;
  #version = '1';
  #reloads = 0;
  readonly #rowsOf: ((item: In) => number) | undefined;
  /** With `splitOversize`: how a request too large for one batch is cut and joined. */
  readonly #slicer: RowSlicer<In, Out> | undefined;
  /** With `cache`: identical requests share an answer. */
  readonly #cache: ResponseCache<In, Out> | undefined;
  readonly #reporter: Reporter;
  readonly #batchRun: BatchRunHost<In, Out, ReleasedBatch<In>>;
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
  readonly #flushBound = (): void => this.#flush();
  readonly #afterNextTurnBound = (): void => void setImmediate(this.#flushBound);
  readonly #scheduleFlushBound = (): void => {
    process.nextTick(this.#flushBound);
  };

  #lifecycle: Lifecycle = 'new';
  #startPromise: Promise<void> | undefined;
  #startError: Error | undefined;
  #stopping = false;
  #draining = false;
  #stopPromise: Promise<void> | undefined;
  #idleWaiters: Array<() => void> = [];

  readonly #view = new LiveQueueView(this.#queue);
  #flushScheduled = false;
  #nowCached = false;
  #nowValue = 0;
  readonly #expireNow = (): void => {
    this.#nowCached = false;
  };
  readonly #wake: WakeTimer;
  #inFlight = 0;
  #runningRequests = 0;
  readonly #stats = new StatsCounters();

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
    this.#executors = new ExecutorSwap(toExecutor<Batch, BatchOut>(where, batchFn, 'as the first argument'));
    // Entry points that checked the options already (createHost, createOnnxHost) hand them resolved.
    this.#o = isResolved(options) ? options : resolveOptions(where, options);
    const batcher = (this.#o.batcher ?? new ListBatcher<In, Out>()) as Batcher<In, Out, Batch, BatchOut>;
    this.#rowsOf = batcher.rows?.bind(batcher);
    const cache = this.#o.cache;
    this.#cache = cache === undefined ? undefined : new ResponseCache<In, Out>({ maxEntries: cache.maxEntries, ttlMs: cache.ttlMs, key: cache.key as ((item: In) => unknown) | undefined }, this.#o.clock, this.#o.name);
    if (this.#o.splitOversize) {
      if (typeof batcher.sliceRows !== 'function' || typeof batcher.joinRows !== 'function') {
        throw new TypeError(
          `${this.#o.name}: splitOversize needs a batcher that can cut a request into rows and join the parts' results ` +
            `(sliceRows and joinRows, as ConcatBatcher has); ${describe(batcher)} has ${typeof batcher.sliceRows === 'function' ? 'no joinRows' : 'no sliceRows'}`,
        );
      }
      this.#slicer = { sliceRows: batcher.sliceRows.bind(batcher), joinRows: batcher.joinRows.bind(batcher) };
    }
    const executors = this.#executors;
    const pipeline: PipelineConfig<In, Out, Batch, BatchOut> = {
      batcher,
      run: (batch) => executors.current.run(batch),
      isolateErrors: this.#o.isolateErrors,
      now: () => this.#o.clock.now(),
      name: this.#o.name,
      slots: {
        tryTake: () => {
          if (this.#inFlight >= this.#o.maxConcurrentBatches) return false;
          this.#inFlight++;
          return true;
        },
        give: () => this.#releaseSlot(),
      },
    };
    const clock = this.#o.clock;
    this.#wake = new WakeTimer(clock, () => this.#schedule());
    this.#reporter = new Reporter(this.#o.name, this.#o.observer, () => clock.now());
    this.#laneOk = this.#o.policy === greedyPolicy && this.#rowsOf === undefined && this.#o.priorities === undefined && !this.#reporter.captures;
    this.#updateLane();
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the batch run settles through the host's private methods
    const host = this;
    this.#batchRun = {
      get options() {
        return host.#o;
      },
      pipeline: pipeline as PipelineConfig<In, Out, unknown, unknown>,
      reporter: this.#reporter,
      queued: () => this.#queued(),
      settle: (batch, results) => this.#settle(batch, results),
      rejectAt: (batch, i, error, outcome) => this.#rejectAt(batch, i, error, outcome),
      started: (requests, rows) => {
        this.#inFlight++;
        this.#runningRequests += requests;
        this.#stats.batch(requests, rows);
        return executors.begin();
      },
      finished: (requests, blockedLoop, token) => {
        this.#runningRequests -= requests;
        executors.end(token);
        this.#releaseSlot(blockedLoop);
      },
    };
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
    return this.#version;
  }

  /**
   * The executor serving now (after a reload, the new one): what a host subclass reads to show its
   * model (an ONNX host's `session`, `model`, `modelPath`), instead of patching getters onto the
   * instance.
   */
  protected get servingExecutor(): Executor<Batch, BatchOut> {
    return this.#executors.current;
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
    const s = this.#stats.snapshot(this.#queued(), this.#runningRequests, this.#inFlight);
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
      // Once per burst on the real clock (#burstNow caches it), per call on an injected one.
      if (!this.#nowCached) lane.stamp(this.#burstNow());
      lane.push(item, nextResolve, this.#o.maxBatchSize);
      this.#schedule();
      return promise;
    }
    return this.#enter(item, options);
  }

  /** `inference()` past the plain lane: the cache, then the queue. */
  #enter(item: In, options: RequestOptions | undefined): Promise<Out> {
    if (this.#cache === undefined) return this.#submit(item, options);
    if (this.#stopping) return this.#refuseStopped();
    if (options !== undefined) {
      const bad = checkRequestOptions(this.#o.name, options);
      if (bad !== undefined) return this.#refuse(bad, 'error');
    }
    return this.#cache.run(item, options, (i, opts) => this.#submit(i, opts));
  }

  /** Queues one request (what `inference()` does, past the cache). */
  #submit(item: In, options?: RequestOptions): Promise<Out> {
    if (this.#stopping) return this.#refuseStopped();
    if (this.#lifecycle === 'failed') return Promise.reject(this.#startError);
    const o = this.#o;
    let rows = 1;
    if (this.#rowsOf !== undefined) {
      try {
        rows = this.#rowsOf(item);
      } catch (e) {
        return this.#refuse(toError(e, "The batcher's rows"), 'error');
      }
      if (!Number.isInteger(rows) || rows < 1 || rows > o.maxBatchSize) {
        if (this.#slicer !== undefined && Number.isInteger(rows) && rows > o.maxBatchSize) {
          return runInParts((part, opts) => this.#submit(part, opts), this.#slicer, item, rows, o.maxBatchSize, options);
        }
        return this.#refuse(
          new RangeError(
            `${o.name}: a request must have from 1 to maxBatchSize (${o.maxBatchSize}) rows; this one has ${describe(rows)}. ` +
              'Split it, or raise maxBatchSize.',
          ),
          'error',
        );
      }
    }
    let priority = 0;
    let timeoutMs = o.timeoutMs;
    let signal: AbortSignal | undefined;
    if (options !== undefined) {
      const bad = checkRequestOptions(o.name, options);
      if (bad !== undefined) return this.#refuse(bad, 'error');
      if (options.priority !== undefined) priority = options.priority;
      if (options.timeoutMs !== undefined) timeoutMs = options.timeoutMs;
      signal = options.signal;
      if (signal?.aborted) {
        return this.#refuse(new AbortError(`${o.name}: the request was aborted before it was queued`, signal.reason), 'aborted');
      }
    }
    // A level's default time limit, unless the request set its own (no options: level 0).
    if (o.priorities !== undefined && options?.timeoutMs === undefined) timeoutMs = o.priorities.get(priority)?.timeoutMs ?? timeoutMs;
    if (this.#queued() >= o.maxQueueSize) return this.#refuse(new QueueFullError(o.name, o.maxQueueSize), 'queue-full');

    const now = this.#burstNow();
    const promise = new Promise<Out>(capture as (res: (value: Out) => void, rej: (error: Error) => void) => void);
    const req = new PendingRequest<In, Out>(item, rows, now, nextResolve, nextReject);
    // Read from the options, not through the reporter: this is the per-request path.
    const captures = o.observer?.captureContext !== undefined;
    if (timeoutMs !== Infinity || signal !== undefined || priority !== 0 || captures) {
      const x = (req.extras = new RequestExtras());
      x.priority = priority;
      x.deadline = now + timeoutMs;
      if (timeoutMs !== Infinity) x.timer = o.clock.setTimer(() => this.#onTimeout(req), timeoutMs);
      if (signal !== undefined) {
        x.signal = signal;
        x.onAbort = () => this.#onAbort(req);
        signal.addEventListener('abort', x.onAbort, { once: true });
      }
      if (captures) x.context = this.#reporter.capture();
    }
    if (this.#lane.size > 0) this.#spillLane();
    this.#queue.push(req);
    o.policy.enqueued?.(req);
    this.#schedule();
    return promise;
  }

  /** What the warm-up needs from the host: its pipeline, its name and its reporter. */
  #warmupHost(): WarmupHost {
    return { pipeline: this.#batchRun.pipeline, name: this.#o.name, reporter: this.#reporter, clock: this.#o.clock, queued: () => this.#queued() };
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
    const o = this.#o;
    const where = `${o.name}.reload`;
    if (this.#stopping) return Promise.reject(new HostStoppedError(`${where}: the host is stopped (or stopping)`));
    const direct = typeof next === 'function' || (typeof next === 'object' && next !== null && typeof (next as Executor<Batch, BatchOut>).run === 'function');
    try {
      checkReloadOptions(where, options, direct ? [] : (this.#executors.current.reloadOptionKeys ?? []));
      if (direct || this.#executors.current.successor === undefined) toExecutor<Batch, BatchOut>(where, next, '');
    } catch (e) {
      return Promise.reject(e as Error);
    }
    let executor: Executor<Batch, BatchOut> | undefined;
    const discard = (): Promise<void> => Promise.resolve(executor?.stop?.()).catch(() => undefined);
    const run = async (): Promise<void> => {
      await this.start();
      // Built when its turn comes: after an earlier reload, the executor serving then makes it.
      const serving = this.#executors.current;
      executor = direct || serving.successor === undefined ? toExecutor<Batch, BatchOut>(where, next, '') : await serving.successor(next, options);
      const fresh = executor;
      try {
        await fresh.start?.();
        if (o.warmup !== undefined) {
          const pipeline = { ...this.#batchRun.pipeline, run: (batch: unknown) => fresh.run(batch as Batch) };
          await runWarmup({ ...this.#warmupHost(), pipeline }, o.warmup);
        }
      } catch (e) {
        await discard();
        const message = toError(e, "The new executor's start").message;
        throw new Error(`${o.name}.reload: the new model could not be started, so the current one keeps serving: ${message}`, { cause: e });
      }
      if (this.#stopping) {
        await discard();
        throw new HostStoppedError(`${o.name}.reload: the host was stopped while the new model started`);
      }
      this.#executors.swap(fresh);
      this.#reloads++;
      this.#version = options.version ?? String(this.#reloads + 1);
      this.#schedule();
    };
    const done = this.#reloading.catch(() => undefined).then(run);
    this.#reloading = done.catch(() => undefined);
    return done;
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
    if (this.#startPromise === undefined) {
      this.#lifecycle = 'starting';
      this.#startPromise = (async () => {
        try {
          await this.#executors.current.start?.();
          if (this.#o.warmup !== undefined) await runWarmup(this.#warmupHost(), this.#o.warmup);
          this.#lifecycle = 'ready';
        } catch (e) {
          this.#lifecycle = 'failed';
          this.#updateLane();
          this.#startError = toError(e, 'The executor\'s start');
          throw this.#startError;
        }
      })();
      this.#startPromise.then(
        () => this.#schedule(),
        () => {
          this.#rejectQueued(() => this.#startError as Error, 'error');
          this.#notifyIdle();
        },
      );
    }
    return this.#startPromise;
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
    this.#o = { ...this.#o, ...resolveTunable(where, options, this.options) };
    this.#updateLane();
    const max = this.#o.maxBatchSize;
    for (const r of this.#queue.live()) {
      if (r.rows > max) {
        this.#queue.discard(r);
        this.#reject(r, new RangeError(`${this.#o.name}: maxBatchSize was lowered to ${max}, below this request's ${r.rows} rows`), 'error');
      }
    }
    this.#wake.clear();
    this.#schedule();
  }

  /** Resolves when nothing is queued or running (at once if already so). */
  onIdle(): Promise<void> {
    if (this.#isIdle()) return resolved;
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Stops the host. New calls reject with `HostStoppedError` at once. With `drain: true` (the
   * default) every accepted request is answered first; with `drain: false` queued requests reject
   * with `HostStoppedError`. Running batches always finish and deliver. Resolves once the last
   * batch is done and the executor has stopped. Calling it again returns the same promise (a later
   * `drain: false` still rejects what is queued).
   */
  stop(options: StopOptions = {}): Promise<void> {
    const drain = options.drain ?? true;
    if (typeof drain !== 'boolean') {
      return Promise.reject(new TypeError(`${this.#o.name}.stop: expected \`drain\` to be a boolean, got ${describe(drain)}`));
    }
    this.#stopping = true;
    this.#updateLane();
    this.#draining = drain;
    if (!drain) {
      this.#rejectQueued(() => new HostStoppedError(`${this.#o.name}: the host was stopped without draining before this request ran`), 'stopped');
      this.#wake.clear();
    }
    if (this.#stopPromise === undefined) {
      this.#stopPromise = (async () => {
        this.#schedule();
        await this.onIdle();
        this.#wake.clear();
        if (this.#lifecycle !== 'new') {
          await this.#startPromise?.catch(() => undefined);
          await this.#reloading; // never rejects: reload() stores it caught
          await this.#executors.released();
          await this.#executors.current.stop?.();
        }
      })();
    }
    this.#notifyIdle();
    return this.#stopPromise;
  }

  /** `await using host = new ModelHost(...)` stops (draining) at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  // ---- scheduling -------------------------------------------------------------------------------

  /**
   * The enqueue time: the clock is read once per burst of calls made before the next microtask
   * checkpoint (a `Promise.all` of many calls, or the callers woken by one batch) and shared by
   * the burst. Reading a monotonic clock per request was a measurable share of the engine's
   * per-request cost; the shared reading is early by at most the burst's own synchronous run.
   * An injected clock is read every time: it is cheap, and tests move it between calls.
   */
  #burstNow(): number {
    if (this.#o.clock !== systemClock) return this.#o.clock.now();
    if (!this.#nowCached) {
      this.#nowValue = this.#o.clock.now();
      this.#nowCached = true;
      // A promise reaction, not queueMicrotask: Node wraps each queueMicrotask callback in an
      // AsyncResource (measured: ~0.6 µs per call, ~10 ns per request at batches of 64).
      void resolved.then(this.#expireNow);
    }
    return this.#nowValue;
  }

  /**
   * Asks for a flush at the end of the current tick, after every promise job already queued, so
   * that a burst of synchronous calls (or callers woken by the last batch) forms one batch. This is
   * not a timer: a lone request still starts without measurable delay.
   */
  #schedule(): void {
    if (this.#flushScheduled || this.#inFlight >= this.#o.maxConcurrentBatches || this.#queued() === 0) return;
    this.#flushScheduled = true;
    // The callback only queues a nextTick, so this promise does not reject.
    void resolved.then(this.#scheduleFlushBound);
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#lifecycle !== 'ready') {
      if (this.#lifecycle === 'new') void this.start().catch(() => undefined);
      return;
    }
    const o = this.#o;
    const queue = this.#queue;
    const lane = this.#lane;
    while (this.#queued() > 0 && this.#inFlight < o.maxConcurrentBatches) {
      const decision = this.#decide();
      if (decision.shed !== undefined && decision.shed.length > 0) this.#shed(decision.shed);
      if (!decision.release) {
        if (decision.wakeAt !== undefined) this.#wake.set(decision.wakeAt);
        return;
      }
      const maxRows = Math.max(1, Math.min(decision.maxRows, o.maxBatchSize));
      this.#wake.clear();
      if (lane.size > 0) {
        runBatch(this.#batchRun, lane.take(maxRows), decision.reason);
        continue;
      }
      let batch = queue.take(maxRows);
      // A policy that allows fewer rows than the head request carries must not stall the queue.
      if (batch.length === 0) batch = queue.take(o.maxBatchSize);
      if (batch.length === 0) return; // everything waiting was just shed
      runBatch(this.#batchRun, new RequestBatch(batch), decision.reason);
    }
  }

  #decide(): ReleaseDecision & { reason?: ReleaseReason } {
    const o = this.#o;
    const queue = this.#queue;
    const lane = this.#lane;
    const rows = queue.rows + lane.size;
    if (this.#draining) {
      return { release: true, maxRows: o.maxBatchSize, reason: rows >= o.maxBatchSize ? 'full' : 'drain' };
    }
    // What greedyPolicy.decide answers when there is no window, no preferred size and one level,
    // without filling the view: the decision is made per batch on the hot path.
    if (o.policy === greedyPolicy && o.maxDelayMs <= 0 && o.preferredBatchSizes === undefined && o.priorities === undefined) {
      return { release: true, maxRows: o.maxBatchSize, reason: rows >= o.maxBatchSize ? 'full' : 'idle' };
    }
    const view = this.#view;
    view.now = o.clock.now();
    view.queuedRows = rows;
    view.queuedRequests = queue.size + lane.size;
    view.oldestEnqueuedAt = lane.size > 0 ? lane.oldestEnqueuedAt() : (queue.oldestEnqueuedAt() as number);
    view.inFlight = this.#inFlight;
    view.freeSlots = o.maxConcurrentBatches - this.#inFlight;
    view.maxBatchSize = o.maxBatchSize;
    view.maxLatencyMs = o.maxLatencyMs;
    view.preferredBatchSizes = o.preferredBatchSizes;
    const levels = o.priorities;
    if (levels === undefined) {
      view.maxDelayMs = o.maxDelayMs;
      view.windowEndsAt = view.oldestEnqueuedAt + o.maxDelayMs;
    } else {
      const w = queue.earliestWindow((p) => levels.get(p)?.maxDelayMs ?? o.maxDelayMs) as { end: number; delay: number };
      view.maxDelayMs = w.delay;
      view.windowEndsAt = w.end;
    }
    try {
      return o.policy.decide(view);
    } catch (e) {
      if (!warnedPolicy) {
        warnedPolicy = true;
        process.emitWarning(`microbatch: release policy '${o.policy.name}' threw (${toError(e, 'policy').message}); releasing instead of stalling`);
      }
      return { release: true, maxRows: o.maxBatchSize, reason: 'idle' };
    }
  }

  #shed(requests: ReadonlyArray<QueuedRequestInfo>): void {
    const o = this.#o;
    const now = o.clock.now();
    for (const info of requests) {
      const r = info as PendingRequest<In, Out>;
      if (!(r instanceof PendingRequest) || r.state !== RequestState.Queued) continue;
      this.#queue.discard(r);
      const waited = now - r.enqueuedAt;
      this.#reject(r, shedByPrediction(o.name, waited, o.policy.name), 'shed');
    }
    this.#notifyIdle();
  }

  /**
   * A batch slot is free again (a batch, or a group on a lent slot, finished): wake whoever waits.
   * After a batch that held the event loop (`blockedLoop`), the next decision waits for the loop's
   * timers phase: requests that arrived meanwhile are still in timer and I/O callbacks, and deciding
   * in this microtask would release a batch without them (measured: 1 request released, 51
   * issued right after). On the real loop two `setImmediate` turns get there: the second runs in
   * the check phase of a loop turn whose timers and I/O phases came after the block, whichever
   * phase the batch ended in. (A 0 ms timer did too, but Node fires it after 1 ms or more: 0.7–0.8
   * ms lost between back-to-back batches.) An injected clock has no loop: a 0 ms timer there.
   */
  #releaseSlot(blockedLoop = false): void {
    this.#inFlight--;
    this.#notifyIdle();
    if (blockedLoop && !this.#flushScheduled && this.#queued() > 0 && !this.#draining) {
      this.#flushScheduled = true;
      if (this.#o.clock === systemClock) setImmediate(this.#afterNextTurnBound);
      else this.#o.clock.setTimer(this.#flushBound, 0);
      return;
    }
    this.#schedule();
  }

  /**
   * Whether a call without options may take the plain lane: the host's settings allow it (see
   * `#lane`), no cache answers first, no default time limit needs a timer, and the host takes
   * requests. Kept as one flag because `inference()` reads it per request.
   */
  #updateLane(): void {
    this.#laneOpen = this.#laneOk && this.#cache === undefined && this.#o.timeoutMs === Infinity && !this.#stopping && this.#lifecycle !== 'failed';
  }

  /** Requests waiting, in the queue and in the plain lane. */
  #queued(): number {
    return this.#queue.size + this.#lane.size;
  }

  /** Moves the plain lane into the queue, in order, before a request that needs an object joins it. */
  #spillLane(): void {
    for (const b of this.#lane.clear()) {
      for (let i = 0; i < b.length; i++) {
        const resolve = b.resolves[i] as Settle<Out>;
        // No `policy.enqueued` here: only the greedy policy, which counts no arrivals, has a lane.
        this.#queue.push(new PendingRequest<In, Out>(b.items[i] as In, 1, b.enqueuedAt(i), resolve, (error) => resolve(Promise.reject(error))));
      }
    }
  }

  // ---- settling ---------------------------------------------------------------------------------

  #onTimeout(r: PendingRequest<In, Out>): void {
    if (r.extras !== undefined) r.extras.timer = undefined;
    const o = this.#o;
    const elapsed = o.clock.now() - r.enqueuedAt;
    const limit = r.deadline - r.enqueuedAt;
    if (r.state === RequestState.Queued) {
      this.#queue.discard(r);
      this.#reject(r, timedOutQueued(o.name, elapsed, limit), 'timeout');
      this.#notifyIdle();
    } else if (r.state === RequestState.Running) {
      this.#reject(r, timedOutRunning(o.name, elapsed, limit), 'timeout');
    }
  }

  #onAbort(r: PendingRequest<In, Out>): void {
    const reason = r.extras?.signal?.reason;
    if (r.state === RequestState.Queued) {
      this.#queue.discard(r);
      this.#reject(r, abortedQueued(this.#o.name, reason), 'aborted');
      this.#notifyIdle();
    } else if (r.state === RequestState.Running) {
      this.#reject(r, abortedRunning(this.#o.name, reason), 'aborted');
    }
  }

  /** Settles a finished batch's requests, each with its own result; returns how many got a value. */
  #settle(batch: ReleasedBatch<In>, results: ReadonlyArray<Out | Error>): number {
    const report = this.#reporter.requests;
    let succeeded = 0;
    if (batch instanceof LaneBatch) {
      // Nothing but the batch settles a lane request (no timer, no signal), and the batch run
      // settles each batch once, so no state is checked.
      const b = batch as LaneBatch<In, Out>;
      for (let i = 0; i < b.length; i++) {
        const value = results[i];
        if (isError(value)) {
          this.#stats.reject('error');
          b.rejectAt(i, value);
          if (report) this.#reporter.settled({ rows: 1, enqueuedAt: b.enqueuedAt(i), startedAt: b.startedAt }, 'error');
        } else {
          (b.resolves[i] as (value: Out) => void)(value as Out);
          succeeded++;
          if (report) this.#reporter.settled({ rows: 1, enqueuedAt: b.enqueuedAt(i), startedAt: b.startedAt }, 'ok');
        }
      }
      return succeeded;
    }
    const requests = (batch as RequestBatch<In, Out>).requests;
    for (let i = 0; i < requests.length; i++) {
      const value = results[i];
      const r = requests[i] as PendingRequest<In, Out>;
      if (isError(value)) this.#reject(r, value, 'error');
      else if (this.#resolve(r, value as Out, report)) succeeded++;
    }
    return succeeded;
  }

  /** Rejects request `i` of a running batch (a lane request is settled only by its batch's run). */
  #rejectAt(batch: ReleasedBatch<In>, i: number, error: Error, outcome: Exclude<RequestOutcome, 'ok' | 'queue-full'>): void {
    if (batch instanceof LaneBatch) {
      const b = batch as LaneBatch<In, Out>;
      this.#stats.reject(outcome);
      b.rejectAt(i, error);
      if (this.#reporter.requests) this.#reporter.settled({ rows: 1, enqueuedAt: b.enqueuedAt(i), startedAt: b.startedAt }, outcome);
      return;
    }
    this.#reject((batch as RequestBatch<In, Out>).requests[i] as PendingRequest<In, Out>, error, outcome);
  }

  /** Rejects every waiting request (the start failed, or a stop without draining). */
  #rejectQueued(error: () => Error, outcome: Exclude<RequestOutcome, 'ok' | 'queue-full'>): void {
    for (const r of this.#queue.clear()) this.#reject(r, error(), outcome);
    const now = this.#o.clock.now();
    for (const b of this.#lane.clear()) {
      b.startedAt = now;
      for (let i = 0; i < b.length; i++) this.#rejectAt(b, i, error(), outcome);
    }
  }

  /** Returns false if the request was already settled (timed out or aborted while running). */
  #resolve(r: PendingRequest<In, Out>, value: Out, report: boolean): boolean {
    if (r.state === RequestState.Settled) return false;
    this.#cleanup(r);
    r.resolve(value);
    if (report) this.#reporter.settled(r, 'ok');
    return true;
  }

  #reject(r: PendingRequest<In, Out>, error: Error, outcome: Exclude<RequestOutcome, 'ok' | 'queue-full'>): void {
    if (r.state === RequestState.Settled) return;
    this.#cleanup(r);
    this.#stats.reject(outcome);
    r.reject(error);
    if (this.#reporter.requests) this.#reporter.settled(r, outcome);
  }

  #cleanup(r: PendingRequest<In, Out>): void {
    const ran = r.state === RequestState.Running;
    r.state = RequestState.Settled;
    if (!ran) r.startedAt = this.#o.clock.now();
    const x = r.extras;
    if (x === undefined) return;
    x.context = undefined;
    if (x.timer !== undefined) {
      this.#o.clock.clearTimer(x.timer);
      x.timer = undefined;
    }
    if (x.signal !== undefined && x.onAbort !== undefined) {
      x.signal.removeEventListener('abort', x.onAbort);
      x.signal = undefined;
      x.onAbort = undefined;
    }
  }

  /** Rejects a request that was never queued. */
  #refuse(error: Error, outcome: RequestOutcome): Promise<never> {
    this.#stats.reject(outcome);
    this.#reporter.refused(outcome);
    return Promise.reject(error);
  }

  #refuseStopped(): Promise<never> {
    return this.#refuse(new HostStoppedError(`${this.#o.name}: the host is stopped (or stopping) and accepts no new requests`), 'stopped');
  }

  #isIdle(): boolean {
    return this.#queued() === 0 && this.#inFlight === 0;
  }

  #notifyIdle(): void {
    if (this.#idleWaiters.length === 0 || !this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}

