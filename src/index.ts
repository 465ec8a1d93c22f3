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
export type { BatchEvent, HostObserver, RequestEvent, RequestOutcome } from './core/observer';
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
