/**
 * microbatch: dynamic batching for ML models in Node.js.
 *
 * Callers `await host.inference(x)` one item at a time; the host merges concurrent requests into
 * batches, runs the model once per batch and answers each caller with its own result.
 * @packageDocumentation
 */
export { ModelHost } from './api/model-host';
export type { HostStats, StopOptions } from './api/model-host';
export { Proxy } from './api/proxy';
export type { ProxyOptions } from './api/proxy';
export { ListBatcher } from './batchers/list-batcher';
export type { ListBatcherOptions } from './batchers/list-batcher';
export type { Batcher, Merged, Partition } from './core/batcher';
export { systemClock } from './core/clock';
export type { Clock, TimerHandle } from './core/clock';
export { ManualClock } from './core/manual-clock';
export {
  AbortError,
  BatchSizeMismatchError,
  DeadlineExceededError,
  HostStoppedError,
  MicrobatchError,
  QueueFullError,
} from './core/errors';
export type { DeadlineReason } from './core/errors';
export { CHANNELS } from './core/observer';
export type { BatchEvent, HostObserver, RequestEvent, RequestOutcome } from './core/observer';
export type { HostOptions, RequestOptions, TunableOptions } from './core/options';
export { greedyPolicy } from './core/policy';
export type {
  BatchOutcome,
  LatencyModelView,
  QueuedRequestInfo,
  QueueView,
  ReleaseDecision,
  ReleasePolicy,
  ReleaseReason,
} from './core/policy';
export type { BatchFunction, Executor } from './executors/executor';
