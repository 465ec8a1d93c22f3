import type { Worker } from 'node:worker_threads';
import { DeadlineExceededError } from '../../core/errors';
import { WorkerCrashedError, WorkerStartError } from './errors';
import type { FromWorker, ToWorker, WorkerBoot } from './protocol';
import { spawnWorker, type SpawnPlan } from './spawn';
import { decodeFromPost, type TensorReviver } from './transfer';
import { reviveError } from './wire-error';
import { giveBuffer } from '../../tensor/buffer-pool';
import { exitFlag, releaseExitFlag } from './exit-guard';

/** Settings a slot needs from its executor. @internal */
export interface SlotSettings {
  readonly name: string;
  readonly plan: SpawnPlan;
  readonly boot: WorkerBoot;
  readonly startTimeoutMs: number;
  readonly batchTimeoutMs: number;
  readonly reviveTensor: TensorReviver;
  /** The slot's worker left without being asked to (crash, exit, batch timeout): replace it. */
  readonly onDead: (slot: WorkerSlot) => void;
  /** The slot finished a batch and can take the next. */
  readonly onIdle: (slot: WorkerSlot) => void;
}

interface Job {
  readonly id: number;
  readonly startedAt: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

type State = 'starting' | 'idle' | 'busy' | 'stopping' | 'dead';

/**
 * One worker thread and the one batch it may be running. It turns every way a worker can end into
 * exactly one settlement of that batch: an answer, the model's error, a crash (exit code named), or
 * a batch timeout (the thread is terminated). It never restarts itself; the executor replaces it.
 * @internal
 */
export class WorkerSlot {
  readonly index: number;
  /** Resolves when the worker's module is loaded; rejects with a {@link WorkerStartError}. */
  readonly ready: Promise<void>;
  readonly #s: SlotSettings;
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #state: State = 'starting';
  #job: Job | undefined;
  #nextId = 0;
  #lastError: Error | undefined;
  #reportedDead = false;
  #wasReady = false;
  #startTimer: NodeJS.Timeout | undefined;
  #readyResolve!: () => void;
  #readyReject!: (e: Error) => void;
  #onStopped: ((error: Error | undefined) => void) | undefined;

  constructor(index: number, settings: SlotSettings) {
    this.index = index;
    this.#s = settings;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#readyResolve = resolve;
      this.#readyReject = reject;
    });
    // A failed start is reported through start(); keep an unobserved rejection from being fatal.
    this.ready.catch(() => undefined);
    // process.exit() waits for this worker's running batch (see exit-guard.ts).
    const flag = exitFlag();
    const boot: WorkerBoot = { ...settings.boot, context: { ...settings.boot.context, workerIndex: index }, exitFlag: flag };
    this.#worker = spawnWorker(settings.plan, boot, `${settings.name} #${index}`);
    this.#worker.on('message', (m: FromWorker) => this.#onMessage(m));
    this.#worker.on('error', (e: Error) => {
      this.#lastError = e;
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', (code: number) => {
        releaseExitFlag(flag);
        this.#onExit(code);
        resolve();
      });
    });
    if (settings.startTimeoutMs !== Infinity) {
      this.#startTimer = setTimeout(() => {
        this.#failStart(new WorkerStartError(`${this.#where}: did not become ready within startTimeoutMs (${settings.startTimeoutMs} ms)`, index));
      }, settings.startTimeoutMs);
    }
  }

  /** True when ready and not running a batch. */
  get idle(): boolean {
    return this.#state === 'idle';
  }

  /** True while the thread is (or may still be) usable. */
  get alive(): boolean {
    return this.#state !== 'dead' && this.#state !== 'stopping';
  }

  get #where(): string {
    return `${this.#s.name}: worker ${this.index}`;
  }

  /** Sends one batch; the slot must be idle. Settles exactly once. */
  run(batch: unknown, transferList: ArrayBuffer[]): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const id = this.#nextId++;
      const message: ToWorker = { kind: 'run', id, batch };
      try {
        this.#worker.postMessage(message, transferList);
      } catch (e) {
        reject(new TypeError(`${this.#s.name}: the batch cannot be sent to a worker thread (${(e as Error).message}); batches must be structured-cloneable`, { cause: e }));
        return;
      }
      // A running batch keeps the process alive; an idle pool does not (see #becomeIdle).
      this.#worker.ref();
      this.#state = 'busy';
      const job: Job = { id, startedAt: performance.now(), resolve, reject, timer: undefined };
      this.#job = job;
      if (this.#s.batchTimeoutMs !== Infinity) job.timer = setTimeout(() => this.#onBatchTimeout(job), this.#s.batchTimeoutMs);
    });
  }

  /**
   * Asks the worker to run its module's `stop()` hook, waits for it (at most `timeoutMs`), then
   * terminates the thread and waits until it is gone.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (this.#state === 'idle' || this.#state === 'busy') {
      this.#state = 'stopping';
      this.#worker.ref();
      let timer: NodeJS.Timeout | undefined;
      const hookError = await new Promise<Error | undefined>((resolve) => {
        this.#onStopped = resolve;
        timer = setTimeout(() => resolve(new Error(`its stop() did not finish within stopTimeoutMs (${timeoutMs} ms)`)), timeoutMs);
        this.#worker.postMessage({ kind: 'stop' } satisfies ToWorker);
      });
      clearTimeout(timer);
      if (hookError !== undefined) process.emitWarning(`${this.#where}: releasing the model failed: ${hookError.message}`);
    } else if (this.#state === 'starting') {
      this.#failStart(new WorkerStartError(`${this.#where}: the executor was stopped while this worker was starting`, this.index));
    }
    if (this.#state !== 'dead') this.#state = 'stopping';
    await this.#worker.terminate();
    await this.#exited;
  }

  /** Ends the thread at once (a failed start, a stuck batch). */
  kill(): void {
    void this.#worker.terminate();
  }

  #onMessage(m: FromWorker): void {
    switch (m.kind) {
      case 'ready':
        if (this.#state !== 'starting') return;
        clearTimeout(this.#startTimer);
        this.#wasReady = true;
        this.#becomeIdle();
        this.#readyResolve();
        return;
      case 'start-failed': {
        const cause = reviveError(m.error);
        this.#failStart(new WorkerStartError(`${this.#where} failed to start: ${cause.message}`, this.index, cause));
        return;
      }
      case 'result':
      case 'failed': {
        const job = this.#job;
        if (job === undefined || job.id !== m.id) return; // a late answer to a batch that timed out
        this.#finishJob();
        if (m.kind === 'result') {
          for (const b of m.spent ?? []) giveBuffer(b);
          try {
            job.resolve(decodeFromPost(m.value, this.#s.reviveTensor));
          } catch (e) {
            job.reject(e as Error);
          }
        } else {
          job.reject(reviveError(m.error));
        }
        this.#becomeIdle();
        this.#s.onIdle(this);
        return;
      }
      case 'stopped':
        this.#onStopped?.(m.error === undefined ? undefined : reviveError(m.error));
        this.#onStopped = undefined;
        return;
    }
  }

  #onExit(code: number): void {
    const previous = this.#state;
    this.#state = 'dead';
    clearTimeout(this.#startTimer);
    this.#onStopped?.(new Error(`the worker exited with code ${code} before its stop() finished`));
    this.#onStopped = undefined;
    const detail = this.#lastError === undefined ? '' : ` after an uncaught ${this.#lastError.name}: ${this.#lastError.message}`;
    if (previous === 'starting') {
      this.#readyReject(new WorkerStartError(`${this.#where} exited with code ${code} while starting${detail}`, this.index, this.#lastError));
      return;
    }
    const job = this.#job;
    if (job !== undefined) {
      this.#finishJob();
      job.reject(
        new WorkerCrashedError(
          `${this.#where} exited with code ${code}${detail} while running this request's batch; the batch was rejected and the worker is being replaced`,
          code,
          this.index,
          this.#lastError,
        ),
      );
    }
    // Only a worker that was serving is replaced here; a failed start is reported through `ready`.
    if (previous !== 'stopping' && this.#wasReady) this.#reportDead();
  }

  #onBatchTimeout(job: Job): void {
    if (this.#job !== job) return;
    this.#finishJob();
    const elapsed = performance.now() - job.startedAt;
    job.reject(
      new DeadlineExceededError(
        `${this.#where} ran a batch longer than batchTimeoutMs (${this.#s.batchTimeoutMs} ms); the batch was rejected and the worker is being replaced`,
        'batch-timeout',
        'running',
        elapsed,
      ),
    );
    this.#state = 'dead';
    this.kill();
    this.#reportDead();
  }

  #failStart(error: WorkerStartError): void {
    if (this.#state !== 'starting') return;
    clearTimeout(this.#startTimer);
    this.#state = 'dead';
    this.#readyReject(error);
    this.kill();
  }

  #finishJob(): void {
    const job = this.#job;
    if (job?.timer !== undefined) clearTimeout(job.timer);
    this.#job = undefined;
  }

  #becomeIdle(): void {
    this.#state = 'idle';
    // An idle pool must not keep the process alive by itself (a forgotten stop() would hang exit).
    this.#worker.unref();
  }

  #reportDead(): void {
    if (this.#reportedDead) return;
    this.#reportedDead = true;
    this.#s.onDead(this);
  }
}
