import type { WireError } from './wire-error';

/**
 * The messages between the executor (main thread) and one worker. Every exchange is a request from
 * the main thread answered once by the worker, except `ready`/`start-failed`, which the worker sends
 * by itself once its module is loaded.
 * @internal
 */

/** What the worker is started with (`workerData`). */
export interface WorkerBoot {
  /** Absolute path of the module to load. */
  readonly module: string;
  /** The export to use (`'default'` also accepts `module.exports = fn`). */
  readonly exportName: string;
  /** Handed to the factory. */
  readonly context: WorkerContext;
  /** Shared with the main thread: marks a running batch, and says when the process exits (exit-guard.ts). */
  readonly exitFlag?: Int32Array;
}

/**
 * What a worker module's factory receives: which worker this is, how many there are, the thread
 * budget for onnxruntime, and the executor's `workerData`.
 *
 * @example
 * ```ts
 * // model.worker.ts
 * export default async function ({ intraOpNumThreads, workerData }: WorkerContext) {
 *   const session = await InferenceSession.create(workerData.modelPath, { intraOpNumThreads });
 *   return (batch: TensorLike) => session.run({ X: new Tensor('float32', batch.data, batch.dims) }).then((o) => o.Y);
 * }
 * ```
 */
export interface WorkerContext<Data = unknown> {
  /** This worker's index, from 0 to `workers - 1` (a replacement keeps the index it replaces). */
  readonly workerIndex: number;
  /** How many workers the executor runs. */
  readonly workers: number;
  /**
   * The executor's `intraOpNumThreads`: pass it to `InferenceSession.create` so that
   * threads × workers stays within the machine's cores. `undefined` when not set.
   */
  readonly intraOpNumThreads: number | undefined;
  /** The executor's `workerData` (a structured clone). */
  readonly workerData: Data;
}

/** Main thread → worker. */
export type ToWorker = { readonly kind: 'run'; readonly id: number; readonly batch: unknown } | { readonly kind: 'stop' };

/** Worker → main thread. */
export type FromWorker =
  | { readonly kind: 'ready' }
  | { readonly kind: 'start-failed'; readonly error: WireError }
  | { readonly kind: 'result'; readonly id: number; readonly value: unknown; readonly spent?: readonly ArrayBuffer[] }
  | { readonly kind: 'failed'; readonly id: number; readonly error: WireError }
  | { readonly kind: 'stopped'; readonly error?: WireError };
