/**
 * microbatch: dynamic batching for ML models in Node.js.
 *
 * Callers `await host.inference(x)` one item at a time; the host merges concurrent requests into
 * batches, runs the model once per batch and answers each caller with its own result.
 *
 * The root holds the batching family (the engine, the three styles, their options and results),
 * the batchers, the errors, the clock and the observer, plus every name the guides and examples
 * import from it. Each concern's whole surface is in its subpath: `microbatch/batchers`,
 * `microbatch/policy`, `microbatch/generate`, `microbatch/worker`, `microbatch/socket`,
 * `microbatch/redis`, `microbatch/onnx`, `microbatch/http`.
 * @packageDocumentation
 * @module microbatch
 */
// tsyringe (the decorator style's container) refuses to load without the Reflect polyfill; importing
// it here means users of the package never have to.
import 'reflect-metadata';
import { connectHost as connectSocketHost, serveHost as serveSocketHost } from './remote/socket';

// The batching family: the engine and its three styles.
export { ModelHost } from './engine/model-host';
export type { HostStats, StopOptions } from './engine/model-host';
export type { ReloadOptions } from './engine/executor-swap';
export type { CacheStats } from './engine/response-cache';
export type { BatchFunction, Executor } from './executors/executor';
export type { CacheOptions, HostOptions, PriorityLevelOptions, RequestOptions, TunableOptions, WarmupOptions } from './core/options';
export { Proxy } from './api/proxy';
export type { ProxyOptions } from './api/proxy';
export { batching } from './api/batching';
export type { BatchingDecorator } from './api/batching';
export { getBatchingMetadata } from './api/batching-metadata';
export type { BatchingMetadata, BatchingOptions } from './api/batching-metadata';
export { asBatched, asBatching } from './api/generated-inference';
export type { Batched, Batching } from './api/generated-inference';
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
export { createHost, HostedModel } from './api/create-host';
export type { Constructor, CreateHostOptions, HostedWorkerOptions, HostReloadOptions } from './api/create-host';
export { createWorkerHost } from './api/create-worker-host';
export type { ModuleHostOptions } from './api/create-worker-host';
export { ContextProviderError } from './api/context';
export type { ContextFactory, ContextProvider, ContextProviders } from './api/context';
export { OnnxSession, WorkerInfo } from './api/tokens';

// Batchers (all of them, with their option and context types, in microbatch/batchers).
export { BucketBatcher, ConcatBatcher, DictBatcher, ListBatcher, PadBatcher, TensorInputError } from './batchers';
export type { Batcher, Merged, Partition, TensorLike } from './batchers';

// Errors, clock, observer.
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
export { systemClock } from './core/clock';
export type { Clock, TimerHandle } from './core/clock';
export { ManualClock } from './core/manual-clock';
export { CHANNELS } from './core/observer';
export type { BatchEvent, HostObserver, RequestEvent, RequestOutcome, TransportEvent } from './core/observer';
export { isServableWith } from './core/servable';
export type { ModelSignature, Servable, ServableGenerateOptions, ServableLimits, ServableStats, ServableTokenStream, ServableWith, TensorSignature } from './core/servable';
export { combineObservers } from './observe/combine';
export type { WatchedHost } from './observe/common';

// Release policies (the whole contract in microbatch/policy).
export { AdaptivePolicy, adaptivePolicy, greedyPolicy, LatencyModel } from './core/policies';
export type { QueueView, ReleasePolicy } from './core/policies';

// Worker threads (all of it in microbatch/worker).
export { WorkerCrashedError, WorkerExecutor, WorkerStartError } from './executors/worker';
export type { WorkerContext } from './executors/worker';

// The generation family (all of it in microbatch/generate): what the guides import from the root.
export { createGenerationHost, DecoderBatcher, generating, GenerationHost, GenerationProxy, TokenStream } from './api/generate';
export type { DecoderState, GenerationModel, StepInput, StepOutput } from './api/generate';
export { GenerativeProxy } from './api/generative-proxy';
export { greedy } from './api/greedy-token';
export { createWorkerGenerationHost } from './generate/worker-generation';

// The socket transport (microbatch/socket has it whole).
export { HostUnavailableError } from './remote/socket';

/**
 * Serves a host to other processes on a Unix socket or named pipe.
 * @deprecated Import `serveHost` from `microbatch/socket`: each transport's subpath has its own
 * `serveHost`/`connectHost` pair (`microbatch/redis` too).
 *
 * @example
 * ```ts
 * import { serveHost } from 'microbatch/socket';
 * const server = await serveHost(host, { path: '/tmp/model.sock' });
 * ```
 */
export const serveHost: typeof serveSocketHost = serveSocketHost;

/**
 * Connects to a host served on a Unix socket or named pipe.
 * @deprecated Import `connectHost` from `microbatch/socket`: each transport's subpath has its own
 * `serveHost`/`connectHost` pair (`microbatch/redis` too).
 *
 * @example
 * ```ts
 * import { connectHost } from 'microbatch/socket';
 * const model = await connectHost({ path: '/tmp/model.sock' });
 * ```
 */
export const connectHost: typeof connectSocketHost = connectSocketHost;

// Moved to the subpath of their concern; kept here one release so that existing imports keep
// working (each specifier is @deprecated, so editors strike it through and name the subpath).
export {
  /** @deprecated Import from `microbatch/policy`. */
  type AdaptivePolicyOptions,
  /** @deprecated Import from `microbatch/policy`. */
  type AdaptiveStats,
  /** @deprecated Import from `microbatch/policy`. */
  type BatchOutcome,
  /** @deprecated Import from `microbatch/policy`. */
  type LatencyModelOptions,
  /** @deprecated Import from `microbatch/policy`. */
  type LatencyModelState,
  /** @deprecated Import from `microbatch/policy`. */
  type LatencyModelView,
  /** @deprecated Import from `microbatch/policy`. */
  type QueuedRequestInfo,
  /** @deprecated Import from `microbatch/policy`. */
  type ReleaseDecision,
  /** @deprecated Import from `microbatch/policy`. */
  type ReleaseReason,
  /** @deprecated Import from `microbatch/policy`. */
  type SizeEstimate,
} from './core/policies';
export {
  /** @deprecated Import from `microbatch/batchers`. */
  type BucketBatcherOptions,
  /** @deprecated Import from `microbatch/batchers`. */
  type ConcatBatcherOptions,
  /** @deprecated Import from `microbatch/batchers`. */
  type ConcatContext,
  /** @deprecated Import from `microbatch/batchers`. */
  type DictBatcherOptions,
  /** @deprecated Import from `microbatch/batchers`. */
  type DictContext,
  /** @deprecated Import from `microbatch/batchers`. */
  type KeyAxis,
  /** @deprecated Import from `microbatch/batchers`. */
  type ListBatcherOptions,
  /** @deprecated Import from `microbatch/batchers`. */
  type PadBatcherOptions,
  /** @deprecated Import from `microbatch/batchers`. */
  type PadContext,
  /** @deprecated Import from `microbatch/batchers`. */
  type PadInput,
  /** @deprecated Import from `microbatch/batchers`. */
  type PadValue,
  /** @deprecated Import from `microbatch/batchers`. */
  type Shape,
  /** @deprecated Import from `microbatch/batchers`. */
  TENSOR_TYPES,
  /** @deprecated Import from `microbatch/batchers`. */
  type TensorData,
  /** @deprecated Import from `microbatch/batchers`. */
  type TensorFactory,
  /** @deprecated Import from `microbatch/batchers`. */
  type TensorInput,
  /** @deprecated Import from `microbatch/batchers`. */
  type TensorRecord,
  /** @deprecated Import from `microbatch/batchers`. */
  type TensorType,
  /** @deprecated Import from `microbatch/batchers`. */
  type TypedArray,
  /** @deprecated Import from `microbatch/batchers`. */
  isTensorLike,
  /** @deprecated Import from `microbatch/batchers`. */
  isTensorType,
} from './batchers';
export {
  /** @deprecated Import from `microbatch/socket`. */
  type ConnectHostOptions,
  /** @deprecated Import from `microbatch/socket`. */
  type InferenceTarget,
  /** @deprecated Import from `microbatch/socket`. */
  type ServeHostOptions,
  /** @deprecated Import from `microbatch/socket`. */
  SocketHostClient,
  /** @deprecated Import from `microbatch/socket`. */
  type SocketHostServer,
} from './remote/socket';
export {
  /** @deprecated Import from `microbatch/generate`. */
  type CreateGenerationHostOptions,
  /** @deprecated Import from `microbatch/generate`. */
  type DecoderBatcherOptions,
  /** @deprecated Import from `microbatch/generate`. */
  type DecoderContext,
  /** @deprecated Import from `microbatch/generate`. */
  type FinishReason,
  /** @deprecated Import from `microbatch/generate`. */
  type GenerateOptions,
  /** @deprecated Import from `microbatch/generate`. */
  type Generating,
  /** @deprecated Import from `microbatch/generate`. */
  type GeneratingOptions,
  /** @deprecated Import from `microbatch/generate`. */
  type GenerationObserver,
  /** @deprecated Import from `microbatch/generate`. */
  type GenerationOptions,
  /** @deprecated Import from `microbatch/generate`. */
  type GenerationStats,
  /** @deprecated Import from `microbatch/generate`. */
  type PrefillInput,
  /** @deprecated Import from `microbatch/generate`. */
  type SequenceEvent,
  /** @deprecated Import from `microbatch/generate`. */
  type SequenceOutcome,
  /** @deprecated Import from `microbatch/generate`. */
  type StateOf,
  /** @deprecated Import from `microbatch/generate`. */
  type StepEvent,
  /** @deprecated Import from `microbatch/generate`. */
  type WorkerGenerationHost,
  /** @deprecated Import from `microbatch/generate`. */
  type WorkerGenerationOptions,
  /** @deprecated Import from `microbatch/generate`. */
  asGenerating,
} from './api/generate';
export {
  /** @deprecated Import from `microbatch/generate`. */
  type GenerativeProxyOptions,
} from './api/generative-proxy';
export {
  /** @deprecated Import from `microbatch/worker`. */
  type WorkerBatchObject,
  /** @deprecated Import from `microbatch/worker`. */
  type WorkerExecutorOptions,
  /** @deprecated Import from `microbatch/worker`. */
  type WorkerExecutorStats,
  /** @deprecated Import from `microbatch/worker`. */
  type WorkerFactory,
  /** @deprecated Import from `microbatch/worker`. */
  type WorkerHostOptions,
} from './api/worker';
