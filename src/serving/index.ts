/**
 * The protocol-neutral serving core: what every transport of the Open Inference Protocol (the
 * HTTP server in `microbatch/http`, a gRPC server, a transport of your own) shares. It holds the
 * registry of served models and generators, the limits, request decoding (JSON and raw tensor
 * bytes) checked against each model's signature, answer encoding, datatypes, metadata, model
 * configuration and statistics answers, and the error codes each transport maps to its own
 * statuses. It imports no transport.
 * @packageDocumentation
 */
export { ServingError, toServingError, invalidArgument, logLevelOf, shuttingDown } from './errors';
export { createServingCore, ServingCore } from './core';
export type { CoreCloseOptions, ServingCoreOptions } from './core';
export { LOG_LEVELS, ServerLogger } from './logger';
export type { FailureLevel, LogFields, LogLevel, LogOption, LogOptions } from './logger';
export type { ServingErrorCode } from './errors';
export { ServingRegistry } from './registry';
export type { Served, ServedState } from './registry';
export type { RepositoryControl, RepositoryIndexEntry, RepositoryVersionInfo } from './repository-control';
export { DEFAULT_VERSION, servedVersion } from './servables';
export type { GenerativeServable, GeneratorEntry, InferenceServable, Tokenizer } from './servables';
export { DEFAULT_LIMITS, ownTimeout, RequestGate, requestTimeout, resolveLimits } from './limits';
export type { ResolvedLimits, ServerLimits } from './limits';
export { ELEMENT_BYTES, fromHalfBits, isKServeDatatype, KSERVE_DATATYPES, kserveDatatype, toHalfBits } from './datatypes';
export type { KServeDatatype } from './datatypes';
export { decodeBinary, encodeBinary } from './raw-data';
export { jsonData, parseJsonData } from './json-data';
export { decodeRequest } from './decode-request';
export type { DecodeContext, DecodedRequest, RequestedOutput } from './decode-request';
export { encodeResponse } from './encode-response';
export { answerOutputs } from './answer-outputs';
export type { AnswerOutput } from './answer-outputs';
export type { EncodedResponse } from './encode-response';
export { decodeGenerateRequest } from './generate-request';
export type { GenerateRequest } from './generate-request';
export { checkVersion, DEFAULT_PLATFORM, GENERATION_PLATFORM, generatorMetadata, modelMetadata, SERVER_EXTENSIONS, serverMetadata } from './metadata';
export type { ModelMetadata, ServerMetadata, TensorMetadata } from './metadata';
export { modelConfig } from './model-config';
export type { ModelConfig, ModelConfigBatching, ModelConfigQueuePolicy, ModelConfigTensor, ModelConfigVersionPolicy } from './model-config';
export { StatsCollector } from './model-stats';
export type { BatchSizeStats, ModelStatistics, StatDuration } from './model-stats';
