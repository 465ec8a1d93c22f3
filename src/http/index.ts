/**
 * The HTTP server (`microbatch/http`): serve batching hosts over HTTP with the KServe v2 / Triton
 * inference protocol (JSON and binary tensors), health and readiness probes, Prometheus metrics and
 * graceful shutdown, on `node:http` with no framework: one transport over the protocol-neutral
 * serving core (src/serving), which holds the protocol and maps failures to codes; this layer maps
 * the codes to HTTP statuses.
 * @packageDocumentation
 * @module microbatch/http
 */
export { createInferenceServer } from './server';
export type { InferenceServer } from './server';
export { handleShutdownSignals } from './shutdown';
export { expressMiddleware } from './express';
export type { ConnectMiddleware, MountOptions } from './express';
export { fastifyPlugin } from './fastify';
export type { FastifyInstanceLike, FastifyReplyLike, FastifyRequestLike } from './fastify';
export type { Closable, ShutdownOptions } from './shutdown';
export { DEFAULT_LIMITS } from './options';
export type { CloseOptions, GeneratorEntry, InferenceServerOptions, MetricsSource, ServableGenerator, ServableModel, ServedTensor, ServerLimits, Tokenizer } from './options';
export { HTTP_STATUS, HttpError, toHttpError } from './http-error';
export { LOG_LEVELS, createServingCore, ServingCore } from '../serving';
export type { CoreCloseOptions, ResolvedLimits, LogLevel, LogOption, LogOptions, ServingCoreOptions } from '../serving';
export { KSERVE_DATATYPES, kserveDatatype } from '../serving';
export type { KServeDatatype } from '../serving';
export type { ModelMetadata, ServerMetadata, TensorMetadata } from '../serving';
export type { ModelConfig, ModelConfigBatching, ModelConfigQueuePolicy, ModelConfigTensor, ModelConfigVersionPolicy } from '../serving';
export type { BatchSizeStats, ModelStatistics, StatDuration } from '../serving';
export { ServingError, toServingError } from '../serving';
export type { GenerativeServable, InferenceServable, ServingErrorCode } from '../serving';
export { TIMEOUT_HEADER } from './infer';
export { HEADER_LENGTH } from './encode-response';
