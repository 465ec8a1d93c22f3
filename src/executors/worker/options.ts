import { availableParallelism } from 'node:os';
import type { ResourceLimits } from 'node:worker_threads';
import { checkMs, fail, optionKeys, positiveInteger, rejectUnknownKeys } from '../../core/options';
import { sharedMachineThreads } from './thread-budget';
import type { TensorFactory } from '../../tensor/tensor-like';

/**
 * Options of {@link WorkerExecutor}. Only `module` is required.
 *
 * @typeParam Data - the type of `workerData`.
 *
 * @example
 * ```ts
 * const options: WorkerExecutorOptions<{ modelPath: string }> = {
 *   module: require.resolve('./classifier.worker'),
 *   workers: 2,
 *   intraOpNumThreads: 2,          // 2 workers × 2 threads on a 4-core machine
 *   workerData: { modelPath: '/models/classifier.onnx' },
 *   batchTimeoutMs: 5_000,
 * };
 * ```
 */
export interface WorkerExecutorOptions<Data = unknown> {
  /**
   * The module each worker loads: an absolute path, or an id `require.resolve` finds from the
   * current directory. `.js`/`.cjs`/`.mjs` load as they are; a `.ts` module (ts-node users, jest)
   * is loaded through ts-node's transpile-only register, which must then be installed.
   */
  module: string;
  /**
   * The export of `module` to use: a factory `(ctx: WorkerContext) => batchFn | { run, start?, stop? }`
   * (sync or async), or such an object itself. `'default'` also accepts `module.exports = factory`.
   * @default 'default'
   */
  export?: string;
  /**
   * Worker threads, each with its own copy of the model; up to this many batches run at once. Give
   * the host the same `maxConcurrentBatches` (`createHost(module, { workers })` does).
   * @default 1
   */
  workers?: number;
  /**
   * onnxruntime intra-op threads per worker, handed to the factory as `ctx.intraOpNumThreads` for its
   * `InferenceSession.create` options. Keep `workers × intraOpNumThreads` ≤ the machine's cores: more
   * threads than cores contend and run slower (a warning is emitted when the product exceeds them).
   * The default leaves the event loop a core: model threads on every core starve the main thread,
   * which answers callers and takes arrivals (docs/executors.md, "Threads").
   * @default max(1, floor((cores − 1) / workers))
   */
  intraOpNumThreads?: number;
  /**
   * Memory limits of each worker (`node:worker_threads` `resourceLimits`). A worker that exceeds
   * them dies; its batch rejects with `WorkerCrashedError` and the worker is replaced.
   * @default Node's defaults
   */
  resourceLimits?: ResourceLimits;
  /**
   * Any structured-cloneable value, handed to the factory as `ctx.workerData` (model path, labels...).
   * @default undefined
   */
  workerData?: Data;
  /**
   * Time limit for one batch inside a worker. Past it the batch's callers reject with
   * `DeadlineExceededError` (reason `'batch-timeout'`) and the worker is terminated and replaced, so
   * a hung model does not keep its thread. (A worker blocked in native code, such as a long
   * `session.run()`, stops once that call returns.) `Infinity` means no limit.
   * @default Infinity
   */
  batchTimeoutMs?: number;
  /**
   * Move the batch's typed-array buffers to the worker instead of copying them. They are then
   * detached on this thread: safe when the batcher builds a fresh batch (`ConcatBatcher`,
   * `PadBatcher`), unsafe when the batch holds the callers' own arrays (`ListBatcher` items,
   * `DictBatcher` `'shared'` keys), which would be emptied under the callers' feet. Results are
   * always moved back, since the worker is done with them.
   * @default false
   */
  transferBatch?: boolean;
  /**
   * Register ts-node's transpile-only loader in each worker even though `module` is JavaScript,
   * for a factory that itself requires TypeScript modules (as `createHost(C, { executor: 'worker' })`
   * does with a class defined in a `.ts` file).
   * @default false (ts-node is registered when `module` or this package is TypeScript)
   */
  loadsTypeScript?: boolean;
  /**
   * Builds tensors on this thread from tensors the worker returned as class instances (structured
   * clone drops their class). Returned plain `{ type, data, dims }` objects are left as they are.
   * @default an onnxruntime-node `Tensor` when the worker returned one and onnxruntime-node loads here, else a plain `{ type, data, dims }`
   */
  tensor?: TensorFactory;
  /**
   * How long a worker may take to load its module and run the factory before `start()` rejects.
   * @default 60000
   */
  startTimeoutMs?: number;
  /**
   * How long `stop()` waits for each worker's `stop()` hook (releasing the session) before
   * terminating the thread anyway.
   * @default 5000
   */
  stopTimeoutMs?: number;
  /**
   * A name for error messages and thread names.
   * @default 'WorkerExecutor'
   */
  name?: string;
}

/** The options with defaults filled in. @internal */
export interface ResolvedWorkerOptions {
  readonly module: string;
  readonly exportName: string;
  readonly workers: number;
  readonly intraOpNumThreads: number;
  readonly resourceLimits: ResourceLimits | undefined;
  readonly workerData: unknown;
  readonly batchTimeoutMs: number;
  readonly transferBatch: boolean;
  readonly loadsTypeScript: boolean;
  readonly tensor: TensorFactory | undefined;
  readonly startTimeoutMs: number;
  readonly stopTimeoutMs: number;
  readonly name: string;
}

/** Every key {@link WorkerExecutorOptions} knows. @internal */
export const WORKER_OPTION_KEYS = optionKeys<WorkerExecutorOptions>({
  module: true, export: true, workers: true, intraOpNumThreads: true, resourceLimits: true, workerData: true,
  batchTimeoutMs: true, transferBatch: true, loadsTypeScript: true, tensor: true, startTimeoutMs: true, stopTimeoutMs: true, name: true,
});

let warnedOversubscribed = false;

/** Validates the options (types only; the module is resolved by `start()`). @internal */
export function resolveWorkerOptions(options: WorkerExecutorOptions): ResolvedWorkerOptions {
  let where = 'WorkerExecutor';
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object with at least `module`', options);
  if (options.name !== undefined) {
    if (typeof options.name !== 'string' || options.name === '') fail(where, 'name', 'a non-empty string', options.name);
    where = options.name;
  }
  rejectUnknownKeys(where, options, WORKER_OPTION_KEYS);
  if (typeof options.module !== 'string' || options.module === '') fail(where, 'module', 'a module path or id (a non-empty string)', options.module);
  const exportName = options.export ?? 'default';
  if (typeof exportName !== 'string' || exportName === '') fail(where, 'export', 'an export name (a non-empty string)', exportName);
  const workers = options.workers === undefined ? 1 : positiveInteger(where, 'workers', options.workers);
  const intra = options.intraOpNumThreads === undefined ? sharedMachineThreads(availableParallelism(), workers) : positiveInteger(where, 'intraOpNumThreads', options.intraOpNumThreads);
  if (options.resourceLimits !== undefined && (typeof options.resourceLimits !== 'object' || options.resourceLimits === null)) {
    fail(where, 'resourceLimits', 'an object like { maxOldGenerationSizeMb }', options.resourceLimits);
  }
  if (options.transferBatch !== undefined && typeof options.transferBatch !== 'boolean') fail(where, 'transferBatch', 'a boolean', options.transferBatch);
  if (options.loadsTypeScript !== undefined && typeof options.loadsTypeScript !== 'boolean') fail(where, 'loadsTypeScript', 'a boolean', options.loadsTypeScript);
  if (options.tensor !== undefined && typeof options.tensor !== 'function') fail(where, 'tensor', 'a function (type, data, dims) => tensor', options.tensor);
  const cores = availableParallelism();
  if (intra * workers > cores && !warnedOversubscribed) {
    warnedOversubscribed = true;
    process.emitWarning(`${where}: ${workers} workers × intraOpNumThreads ${intra} = ${workers * intra} threads on ${cores} cores; threads beyond the cores contend and slow every batch`);
  }
  return {
    module: options.module,
    exportName,
    workers,
    intraOpNumThreads: intra,
    resourceLimits: options.resourceLimits,
    workerData: options.workerData,
    batchTimeoutMs: options.batchTimeoutMs === undefined ? Infinity : checkMs(where, 'batchTimeoutMs', options.batchTimeoutMs, 'positive'),
    transferBatch: options.transferBatch ?? false,
    loadsTypeScript: options.loadsTypeScript ?? false,
    tensor: options.tensor,
    startTimeoutMs: options.startTimeoutMs === undefined ? 60_000 : checkMs(where, 'startTimeoutMs', options.startTimeoutMs, 'positive'),
    stopTimeoutMs: options.stopTimeoutMs === undefined ? 5_000 : checkMs(where, 'stopTimeoutMs', options.stopTimeoutMs, 'zero'),
    name: where,
  };
}
