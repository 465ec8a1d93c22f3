/**
 * Worker threads (`microbatch/worker`): the pool that runs batches off the event loop
 * (`WorkerExecutor`), the contract of a worker module, and the options of the hosts built on it.
 * `createHost(Class, { executor: 'worker' })` and `createHost(modulePath, { workers })` build
 * such hosts in one call.
 * @packageDocumentation
 * @module microbatch/worker
 */
export { WorkerCrashedError, WorkerExecutor, WorkerStartError } from '../executors/worker';
export type { WorkerBatchObject, WorkerContext, WorkerExecutorOptions, WorkerExecutorStats, WorkerFactory } from '../executors/worker';
export { WorkerInfo } from './tokens';
export type { ModuleHostOptions, WorkerHostOptions } from './create-worker-host';
export type { HostedWorkerOptions } from './create-host';
