/**
 * The HTTP server (`microbatch/http`): serve batching hosts over HTTP with the KServe v2 / Triton
 * inference protocol (JSON and binary tensors), health and readiness probes, Prometheus metrics and
 * graceful shutdown, on `node:http` with no framework.
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
export type { ShutdownOptions } from './shutdown';
export { DEFAULT_LIMITS } from './options';
export type { CloseOptions, GeneratorEntry, InferenceServerOptions, MetricsSource, ServableGenerator, ServableModel, ServedTensor, ServerLimits, Tokenizer } from './options';
export { HttpError, toHttpError } from './http-error';
export { LOG_LEVELS } from './logger';
export type { LogLevel, LogOption, LogOptions } from './logger';
export { KSERVE_DATATYPES, kserveDatatype } from './datatypes';
export type { KServeDatatype } from './datatypes';
export type { ModelMetadata, ServerMetadata, TensorMetadata } from './metadata';
export type { ModelConfig, ModelConfigTensor } from './model-config';
export type { BatchSizeStats, ModelStatistics, StatDuration } from './model-stats';
export { TIMEOUT_HEADER } from './infer';
export { HEADER_LENGTH } from './encode-response';
