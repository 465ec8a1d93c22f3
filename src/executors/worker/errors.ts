import { MicrobatchError } from '../../core/errors';

/**
 * The worker thread running a batch died before answering: it called `process.exit()`, threw an
 * uncaught exception, ran out of memory (`resourceLimits`), or was terminated. Only the batch it was
 * running rejects with this; the executor starts a replacement worker for the next batch.
 *
 * @example
 * ```ts
 * await host.inference(x).catch((e) => {
 *   if (e instanceof WorkerCrashedError) console.warn(`worker ${e.workerIndex} died (exit ${e.exitCode})`);
 * });
 * ```
 */
export class WorkerCrashedError extends MicrobatchError {
  /** The worker's exit code (`process.exit(n)` gives `n`; an uncaught error or `terminate()` gives 1). */
  readonly exitCode: number;
  /** Which worker of the pool (0-based) died. */
  readonly workerIndex: number;
  constructor(message: string, exitCode: number, workerIndex: number, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.exitCode = exitCode;
    this.workerIndex = workerIndex;
  }
}

/**
 * A worker could not get ready: the module was not found, it has no such export, the export is
 * not a factory or batch object, the factory threw, or the worker exited while starting. `start()`
 * (and so `ModelHost.start()`, `createHost(module)`) rejects with it; `cause` is the worker's own
 * error, re-created on this thread with its name, message and stack.
 *
 * @example
 * ```ts
 * await createHost('/no/such/file.js', { maxBatchSize: 8 })
 *   .catch((e) => { if (e instanceof WorkerStartError) console.error(e.message, e.cause); });
 * ```
 */
export class WorkerStartError extends MicrobatchError {
  /** Which worker of the pool (0-based) failed; `undefined` when none was started (the module was not found). */
  readonly workerIndex: number | undefined;
  constructor(message: string, workerIndex: number | undefined, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.workerIndex = workerIndex;
  }
}
