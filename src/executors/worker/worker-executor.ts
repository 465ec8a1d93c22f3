import { HostStoppedError } from '../../core/errors';
import type { Executor } from '../executor';
import { WorkerStartError } from './errors';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerExecutorOptions } from './options';
import type { WorkerBoot } from './protocol';
import { planSpawn, resolveWorkerModule, type SpawnPlan } from './spawn';
import { encodeForPost, reviveTensorDefault, type TensorReviver } from './transfer';
import { WorkerSlot } from './worker-slot';

/** Counters of a {@link WorkerExecutor}, read with {@link WorkerExecutor.stats}. */
export interface WorkerExecutorStats {
  /** Configured worker count. */
  readonly workers: number;
  /** Workers running a batch now. */
  readonly busy: number;
  /** Batches waiting for a free worker (more than `workers` were sent at once). */
  readonly queued: number;
  /** Batches answered so far (with a result or the model's error). */
  readonly batches: number;
  /** Workers replaced after a crash, an exit or a batch timeout. */
  readonly replaced: number;
}

interface QueuedBatch {
  readonly batch: unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/** Replacements that fail to start are retried with exponential backoff, capped here. */
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 5_000;

/**
 * Runs batches in worker threads, so that a model that blocks its thread (onnxruntime-node's
 * `session.run()` does, for the whole inference) leaves the main event loop free for I/O, timers
 * and batching. Each worker loads `module` and builds its batch function from the export (a
 * factory, called once per worker); up to `workers` batches run at once, one per worker.
 *
 * Failures stay contained: a batch function that throws rejects its batch only (the error keeps its
 * name, message, stack and properties; `Error` items in a result reject only their callers); a
 * worker that dies rejects only the batch it was running, with {@link WorkerCrashedError}, and is
 * replaced; a batch past `batchTimeoutMs` rejects and its worker is terminated and replaced. A
 * worker that cannot start makes {@link WorkerExecutor.start} reject with {@link WorkerStartError}.
 *
 * Batches cross as structured clones: typed arrays, plain objects, strings, and tensors (rebuilt as
 * onnxruntime `Tensor`s on the other side when they were ones). Results are moved back with
 * transfer lists; see `transferBatch` for the way in.
 *
 * @typeParam Batch - what the worker's batch function receives.
 * @typeParam BatchOut - what it returns.
 *
 * @example
 * ```ts
 * const executor = new WorkerExecutor({ module: require.resolve('./model.worker'), workers: 2, intraOpNumThreads: 1 });
 * const host = new ModelHost(executor, { maxBatchSize: 32, maxConcurrentBatches: executor.workers });
 * const y = await host.inference(x); // runs in a worker; this thread stays responsive
 * await host.stop();                 // drains, then terminates the workers
 * ```
 */
export class WorkerExecutor<Batch = unknown, BatchOut = unknown> implements Executor<Batch, BatchOut> {
  readonly #o: ResolvedWorkerOptions;
  readonly #reviveTensor: TensorReviver;
  #plan: SpawnPlan | undefined;
  #boot: WorkerBoot | undefined;
  #slots: Array<WorkerSlot | undefined> = [];
  readonly #retries = new Map<number, NodeJS.Timeout>();
  readonly #queue: QueuedBatch[] = [];
  #pending = 0;
  #idleWaiters: Array<() => void> = [];
  #running = false;
  #stopping = false;
  #startPromise: Promise<void> | undefined;
  #stopPromise: Promise<void> | undefined;
  #lastStartError: Error | undefined;
  #batches = 0;
  #replaced = 0;

  /**
   * @param options - the module to load and the pool's settings; only `module` is required.
   * @throws TypeError or RangeError when an option has the wrong type or range (the module itself
   * is looked up by `start()`).
   */
  constructor(options: WorkerExecutorOptions) {
    this.#o = resolveWorkerOptions(options);
    const factory = this.#o.tensor;
    this.#reviveTensor = factory === undefined ? reviveTensorDefault : (_cls, type, data, dims) => factory(type, data as never, dims);
  }

  /** How many workers the pool runs: the `maxConcurrentBatches` a host should use with it. */
  get workers(): number {
    return this.#o.workers;
  }

  /**
   * One per worker: a batch sent while every worker is busy waits in the pool and is posted the
   * moment a worker answers, without waiting for the host (see `Executor.batchesAhead`).
   */
  get batchesAhead(): number {
    return this.#o.workers;
  }

  /** A snapshot of the pool's counters. */
  get stats(): WorkerExecutorStats {
    return {
      workers: this.#o.workers,
      busy: this.#slots.filter((s) => s !== undefined && s.alive && !s.idle).length,
      queued: this.#queue.length,
      batches: this.#batches,
      replaced: this.#replaced,
    };
  }

  /**
   * Starts every worker and resolves once each has loaded its module and built its batch function.
   * Idempotent. Rejects with a {@link WorkerStartError} that carries the worker's own error (module
   * not found, missing export, a factory that threw, an exit while starting); the other workers are
   * then terminated.
   */
  start(): Promise<void> {
    this.#startPromise ??= this.#start();
    return this.#startPromise;
  }

  async #start(): Promise<void> {
    const o = this.#o;
    if (this.#stopping) throw new HostStoppedError(`${o.name}: stopped before it was started`);
    let modulePath: string;
    try {
      modulePath = resolveWorkerModule(o.module);
      this.#plan = planSpawn(modulePath, o.resourceLimits, o.loadsTypeScript);
    } catch (e) {
      const message = (e as { code?: unknown }).code === 'MODULE_NOT_FOUND'
        ? `cannot find the worker module ${JSON.stringify(o.module)} (ids resolve from ${process.cwd()}; give an absolute path or require.resolve(...))`
        : (e as Error).message;
      throw new WorkerStartError(`${o.name}: ${message}`, undefined, e);
    }
    this.#boot = {
      module: modulePath,
      exportName: o.exportName,
      context: { workerIndex: 0, workers: o.workers, intraOpNumThreads: o.intraOpNumThreads, workerData: o.workerData },
    };
    const slots = Array.from({ length: o.workers }, (_, i) => this.#spawn(i));
    this.#slots = slots;
    const outcomes = await Promise.allSettled(slots.map((s) => s.ready));
    const failure = outcomes.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) {
      this.#slots = [];
      await Promise.all(slots.map((s) => s.stop(0)));
      throw failure.reason;
    }
    // Even when stop() was called meanwhile: it drains the batches already sent before ending.
    this.#running = true;
    this.#dispatch();
  }

  /** Runs one batch on the next free worker (waiting for one when all are busy). */
  async run(batch: Batch): Promise<BatchOut> {
    if (this.#stopping) throw new HostStoppedError(`${this.#o.name}: the executor is stopped (or stopping) and runs no new batches`);
    this.#pending++;
    try {
      await this.start();
      return (await new Promise<unknown>((resolve, reject) => {
        this.#queue.push({ batch, resolve, reject });
        this.#dispatch();
      })) as BatchOut;
    } finally {
      this.#pending--;
      if (this.#pending === 0) for (const w of this.#idleWaiters.splice(0)) w();
    }
  }

  /**
   * Waits for every batch sent so far to settle, runs each worker module's `stop()` hook (at most
   * `stopTimeoutMs`), then terminates the threads. Idempotent; `run()` rejects from the moment it
   * is called. Nothing of the pool outlives the returned promise.
   */
  stop(): Promise<void> {
    this.#stopPromise ??= this.#stop();
    return this.#stopPromise;
  }

  async #stop(): Promise<void> {
    this.#stopping = true;
    await this.#startPromise?.catch(() => undefined);
    if (this.#pending > 0) await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    this.#running = false;
    for (const t of this.#retries.values()) clearTimeout(t);
    this.#retries.clear();
    const slots = this.#slots.filter((s): s is WorkerSlot => s !== undefined);
    this.#slots = [];
    await Promise.all(slots.map((s) => s.stop(this.#o.stopTimeoutMs)));
  }

  #spawn(index: number): WorkerSlot {
    const o = this.#o;
    return new WorkerSlot(index, {
      name: o.name,
      plan: this.#plan as SpawnPlan,
      boot: this.#boot as WorkerBoot,
      startTimeoutMs: o.startTimeoutMs,
      batchTimeoutMs: o.batchTimeoutMs,
      reviveTensor: this.#reviveTensor,
      onIdle: () => this.#dispatch(),
      onDead: (slot) => this.#replace(slot.index, 0),
    });
  }

  #dispatch(): void {
    if (!this.#running) return;
    while (this.#queue.length > 0) {
      const slot = this.#slots.find((s) => s?.idle === true);
      if (slot === undefined) break;
      const job = this.#queue.shift() as QueuedBatch;
      const { value, transferList } = encodeForPost(job.batch, this.#o.transferBatch);
      slot.run(value, transferList).then(
        (out) => {
          this.#batches++;
          job.resolve(out);
        },
        (e: Error) => {
          // Crashes and timeouts are not answers from the model; model errors are.
          if (e.name !== 'WorkerCrashedError' && e.name !== 'DeadlineExceededError') this.#batches++;
          job.reject(e);
        },
      );
    }
    // With every worker failing to come back, waiting would hang the callers: fail them now.
    if (this.#queue.length > 0 && this.#slots.every((s) => s === undefined)) {
      const error = new WorkerStartError(
        `${this.#o.name}: no worker is available; the replacement workers failed to start: ${this.#lastStartError?.message ?? 'unknown error'}`,
        undefined,
        this.#lastStartError,
      );
      for (const job of this.#queue.splice(0)) job.reject(error);
    }
  }

  /** Starts a worker in place of one that died; retries with backoff while it fails to start. */
  #replace(index: number, attempt: number): void {
    if (!this.#running) return;
    this.#replaced += attempt === 0 ? 1 : 0;
    const slot = this.#spawn(index);
    this.#slots[index] = slot;
    slot.ready.then(
      () => this.#dispatch(),
      (e: Error) => {
        if (!this.#running || this.#slots[index] !== slot) return;
        this.#slots[index] = undefined;
        this.#lastStartError = e;
        const delay = Math.min(RETRY_BASE_MS * 2 ** attempt, RETRY_MAX_MS);
        if (attempt === 0) process.emitWarning(`${this.#o.name}: the replacement for worker ${index} failed to start (${e.message}); retrying with backoff`);
        const timer = setTimeout(() => {
          this.#retries.delete(index);
          this.#replace(index, attempt + 1);
        }, delay);
        // A pool that cannot recover must not keep the process alive by itself.
        timer.unref();
        this.#retries.set(index, timer);
        this.#dispatch();
      },
    );
  }
}
