/**
 * The worker executor: batches run in worker threads, the event loop stays free.
 * @packageDocumentation
 */
export { WorkerExecutor } from './worker-executor';
export type { WorkerExecutorStats } from './worker-executor';
export type { WorkerExecutorOptions } from './options';
export type { WorkerContext } from './protocol';
export type { WorkerBatchObject, WorkerFactory } from './worker-target';
export { WorkerCrashedError, WorkerStartError } from './errors';
