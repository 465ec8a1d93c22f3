/**
 * Serving a Triton model repository (`microbatch/repository`): `<dir>/<model>/config.pbtxt` (or
 * `config.json`, or none) and numeric version folders `<dir>/<model>/<version>/model.onnx`. Each
 * config's `max_batch_size`, `dynamic_batching`, `instance_group`, `version_policy`,
 * `model_warmup` and `parameters` become the host options of its model's versions, each version
 * served by its own host in a serving core's registry; {@link ModelRepository} loads, reloads,
 * unloads and polls them. The text-format reader and the config mapping are exported for tools.
 * @packageDocumentation
 * @module microbatch/repository
 */
export { ModelRepository, MODEL_CONTROL_MODES } from './model-repository';
export type { ModelControlMode, ModelRepositoryOptions } from './model-repository';
export { ConfigSyntaxError, parseTextFormat } from './text-format';
export type { TextField, TextPosition, TextValue } from './text-format';
export { ConfigValueError, readJsonConfig, readTextConfig } from './config-schema';
export type { ReadConfig, TritonDynamicBatching, TritonModelConfig, TritonQueuePolicy, TritonTensorConfig } from './config-schema';
export { MICROBATCH_PARAMETERS, modelSettings, ONNX_BACKEND, ONNX_PLATFORM, signatureMisfit } from './model-settings';
export type { ModelSettings, RepositoryHostDefaults, VersionPolicy } from './model-settings';
export { listModelFolders, listVersions, selectVersions } from './scan';
export { versionedHost } from './versioned-host';
export type { InferenceServable, RepositoryControl, RepositoryIndexEntry, RepositoryVersionInfo, Served, ServedState, ServingCore, ServingRegistry } from '../serving';
export { createDecoderHost, DECODER_PARAMETERS, decoderSettings } from './decoder-host';
export type { DecoderSettings } from './decoder-host';
