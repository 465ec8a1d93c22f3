/**
 * Release policies (`microbatch/policy`): when a queued batch is released (`greedyPolicy`, the
 * default; `adaptivePolicy`, which sizes batches to a latency budget), the contract for writing
 * your own (`ReleasePolicy` and what it sees), and the latency model the adaptive policy learns.
 * `greedyPolicy`, `adaptivePolicy`, `AdaptivePolicy`, `LatencyModel`, `ReleasePolicy` and
 * `QueueView` are also in the package root.
 * @packageDocumentation
 * @module microbatch/policy
 */
export { AdaptivePolicy, adaptivePolicy } from './adaptive-policy';
export type { AdaptivePolicyOptions, AdaptiveStats } from './adaptive-policy';
export { LatencyModel } from './latency-model';
export type { LatencyModelOptions, LatencyModelState, SizeEstimate } from './latency-model';
export { greedyPolicy } from './policy';
export type { BatchOutcome, LatencyModelView, QueuedRequestInfo, QueueView, ReleaseDecision, ReleasePolicy, ReleaseReason } from './policy';
