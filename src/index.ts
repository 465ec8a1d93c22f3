/**
 * microbatch: dynamic batching for ML models in Node.js.
 *
 * Callers `await host.inference(x)` one item at a time; the host merges concurrent requests into
 * batches, runs the model once per batch and answers each caller with its own result.
 * @packageDocumentation
 * @module microbatch
 */
// tsyringe (the decorator style's container) refuses to load without the Reflect polyfill; importing
// it here means users of the package never have to.
import 'reflect-metadata';

export { batching } from './api/batching';
export type { BatchingDecorator } from './api/batching';
export { getBatchingMetadata } from './api/batching-metadata';
export type { BatchingMetadata, BatchingOptions } from './api/batching-metadata';
export type {
  BatchInput,
  BatchItem,
  BatchMethod,
  BatchMethodKey,
  BatchOf,
  BatchOutOf,
  BatchOutput,
  BatchResult,
  DefaultBatchMethod,
  ItemOf,
  MethodOf,
  ResultOf,
} from './api/batch-method-types';
export { ContextProviderError } from './api/context';
export type { ContextFactory, ContextProvider, ContextProviders } from './api/context';
export { createHost } from './api/create-host';
export { createWorkerHost } from './api/create-worker-host';
export type { WorkerHostOptions } from './api/create-worker-host';
export type { Constructor, CreateHostOptions, HostedModel, HostedWorkerOptions, HostReloadOptions } from './api/create-host';
export { asBatched } from './api/generated-inference';
export type { Batched } from './api/generated-inference';
export { OnnxSession, WorkerInfo } from './api/tokens';
export { ModelHost } from './engine/model-host';
export type { HostStats, StopOptions } from './engine/model-host';
export type { ReloadOptions } from './engine/executor-swap';
export type { ModelSignature, Servable, ServableGenerateOptions, ServableLimits, ServableStats, ServableTokenStream, ServableWith, TensorSignature } from './core/servable';
export type { CacheStats } from './engine/response-cache';
export { Proxy } from './api/proxy';
export type { ProxyOptions } from './api/proxy';
export { BucketBatcher } from './batchers/bucket-batcher';
export type { BucketBatcherOptions } from './batchers/bucket-batcher';
export { ConcatBatcher } from './batchers/concat-batcher';
export type { ConcatBatcherOptions, ConcatContext, Shape } from './batchers/concat-batcher';
export { DictBatcher } from './batchers/dict-batcher';
export type { DictBatcherOptions, DictContext, KeyAxis } from './batchers/dict-batcher';
export { ListBatcher } from './batchers/list-batcher';
export type { ListBatcherOptions } from './batchers/list-batcher';
export { PadBatcher } from './batchers/pad-batcher';
export type { PadBatcherOptions, PadContext, PadInput, PadValue } from './batchers/pad-batcher';
export { TensorInputError } from './batchers/tensor-input-error';
export type { TensorInput, TensorRecord } from './batchers/tensor-items';
export { isTensorType, TENSOR_TYPES } from './tensor/dtypes';
export type { TensorData, TensorType, TypedArray } from './tensor/dtypes';
export { isTensorLike } from './tensor/tensor-like';
export type { TensorFactory, TensorLike } from './tensor/tensor-like';
export type { Batcher, Merged, Partition } from './core/batcher';
export { systemClock } from './core/clock';
export type { Clock, TimerHandle } from './core/clock';
export { ManualClock } from './core/manual-clock';
export {
  AbortError,
  BatchSizeMismatchError,
  DeadlineExceededError,
  DeliveryLimitError,
  HostStoppedError,
  MicrobatchError,
  QueueFullError,
} from './core/errors';
export type { DeadlineReason } from './core/errors';
export { CHANNELS } from './core/observer';
export type { BatchEvent, HostObserver, RequestEvent, RequestOutcome } from './core/observer';
export type { CacheOptions, HostOptions, PriorityLevelOptions, RequestOptions, TunableOptions, WarmupOptions } from './core/options';
export { AdaptivePolicy, adaptivePolicy } from './core/adaptive-policy';
export type { AdaptivePolicyOptions, AdaptiveStats } from './core/adaptive-policy';
export { LatencyModel } from './core/latency-model';
export type { LatencyModelOptions, LatencyModelState, SizeEstimate } from './core/latency-model';
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
export { WorkerCrashedError, WorkerExecutor, WorkerStartError } from './executors/worker';
export type { WorkerBatchObject, WorkerContext, WorkerExecutorOptions, WorkerExecutorStats, WorkerFactory } from './executors/worker';
export { connectHost, HostUnavailableError, serveHost, SocketHostClient } from './remote/socket';
export type { ConnectHostOptions, InferenceTarget, ServeHostOptions, SocketHostServer } from './remote/socket';
export { combineObservers } from './observe/combine';
export type { WatchedHost } from './observe/common';
export { GenerationHost, greedy } from './generate/generation-host';
export type { GenerationStats } from './generate/generation-host';
export { TokenStream } from './generate/token-stream';
export type { FinishReason } from './generate/token-stream';
export type { GenerateOptions, GenerationOptions, PrefillInput, StepInput, StepOutput } from './generate/options';
export type { GenerationObserver, SequenceEvent, SequenceOutcome, StepEvent } from './generate/events';
export { DecoderBatcher } from './generate/decoder-batcher';
export type { DecoderBatcherOptions, DecoderContext, DecoderState } from './generate/decoder-batcher';
export { GenerativeProxy } from './api/generative-proxy';
export type { GenerativeProxyOptions } from './api/generative-proxy';
export { asGenerating, generating } from './api/generating';
export type { Generating, GeneratingOptions, StateOf } from './api/generating';
export { createGenerationHost } from './api/create-generation-host';
export type { CreateGenerationHostOptions } from './api/create-generation-host';
export { createWorkerGenerationHost } from './generate/worker-generation';
export type { WorkerGenerationHost, WorkerGenerationOptions } from './generate/worker-generation';
export type { GenerationModel } from './generate/generation.worker';
