import type { Batcher } from '../core/batcher';
import type { HostOptions } from '../core/options';
import { WORKER_OPTION_KEYS, type WorkerExecutorOptions } from '../executors/worker/options';
import { WorkerExecutor } from '../executors/worker/worker-executor';
import type { ModelHost } from '../engine/model-host';
import { startHost } from '../engine/start-host';

/**
 * Options of a worker module's host (`createHost(module, options)`, the deprecated
 * `createWorkerHost`): the worker pool's ({@link WorkerExecutorOptions}) and the
 * host's ({@link HostOptions}) in one object. `name` names both; `batchTimeoutMs` goes to the pool,
 * which can terminate and replace a hung worker (the host alone could only abandon it);
 * `maxConcurrentBatches` defaults to `workers`.
 *
 * @example
 * ```ts
 * const options: WorkerHostOptions<Float32Array, Float32Array> = {
 *   module: require.resolve('./model.worker'), workers: 2, maxBatchSize: 32, maxDelayMs: 2,
 * };
 * ```
 */
export type WorkerHostOptions<In, Out, Batch = readonly In[], BatchOut = ReadonlyArray<Out | Error>, Data = unknown> = WorkerExecutorOptions<Data> &
  HostOptions<In, Out, Batch, BatchOut>;

/**
 * Options of `createHost(module, options)`: {@link WorkerHostOptions} without `module` (the first
 * argument), and `executor` only as `'worker'` (a worker module's model is built in worker threads).
 *
 * @example
 * ```ts
 * const options: ModuleHostOptions<Float32Array, Float32Array> = { workers: 2, maxBatchSize: 32 };
 * const host = await createHost<Float32Array, Float32Array>(require.resolve('./model.worker'), options);
 * ```
 */
export type ModuleHostOptions<In, Out, Batch = readonly In[], BatchOut = ReadonlyArray<Out | Error>, Data = unknown> = Omit<WorkerHostOptions<In, Out, Batch, BatchOut, Data>, 'module'> & {
  /**
   * Where batches run: a worker module's factory builds the model in each worker thread.
   * @default 'worker'
   */
  executor?: 'worker';
};

/**
 * Builds and starts a {@link ModelHost} whose batches run in a {@link WorkerExecutor}.
 *
 * @deprecated Use {@link createHost} with the worker module's path as the first argument:
 * `createHost(require.resolve('./model.worker'), { workers: 2, maxBatchSize: 32 })`.
 *
 * @example
 * ```ts
 * const host = await createWorkerHost<Float32Array, Float32Array>({
 *   module: require.resolve('./model.worker'), // exports a factory (ctx) => batchFn
 *   workers: 2, intraOpNumThreads: 1, maxBatchSize: 32,
 * });
 * ```
 */
export function createWorkerHost<In, Out, Batch, BatchOut, Data = unknown>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  options: WorkerHostOptions<In, Out, Batch, BatchOut, Data> & { batcher: Batcher<In, Out, Batch, BatchOut, any> },
): Promise<ModelHost<In, Out, Batch, BatchOut>>;
export function createWorkerHost<In, Out, Data = unknown>(options: WorkerHostOptions<In, Out, readonly In[], ReadonlyArray<Out | Error>, Data>): Promise<ModelHost<In, Out>>;
export async function createWorkerHost(options: WorkerHostOptions<unknown, unknown>): Promise<ModelHost<unknown, unknown, unknown, unknown>> {
  return hostOnWorkerModule(options);
}

/**
 * `createHost(module, options)` (and the deprecated `createWorkerHost`): a {@link ModelHost} whose
 * batches run in a {@link WorkerExecutor}: batching, queueing and callers stay on this thread, the
 * model runs in `workers` threads, and up to `workers` batches run at once
 * (`maxConcurrentBatches` follows the worker count unless given). Resolves once every worker is
 * ready; rejects with the worker's `WorkerStartError` otherwise (bad module path, missing export,
 * a factory that threw), leaving no thread behind.
 * @internal
 */
export async function hostOnWorkerModule(options: WorkerHostOptions<unknown, unknown>): Promise<ModelHost<unknown, unknown, unknown, unknown>> {
  const workerOptions: Record<string, unknown> = {};
  const hostOptions: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (key === 'name') {
      workerOptions[key] = value;
      hostOptions[key] = value;
    } else if (WORKER_OPTION_KEYS.includes(key)) {
      workerOptions[key] = value;
    } else {
      hostOptions[key] = value;
    }
  }
  const executor = new WorkerExecutor(workerOptions as unknown as WorkerExecutorOptions);
  hostOptions.maxConcurrentBatches ??= executor.workers;
  return startHost(executor, hostOptions as unknown as HostOptions<unknown, unknown, unknown, unknown>);
}
