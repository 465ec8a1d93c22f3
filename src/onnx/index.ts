/**
 * ONNX helpers (`microbatch/onnx`): load an onnxruntime-node session, read which axis of each
 * input is the batch, and build a ready batching host for a model file in one call:
 * `createOnnxHost(file, options)`, on this thread, or in worker threads with `workers` (what a
 * server wants).
 * onnxruntime-node is an optional peer dependency, loaded only when these helpers run.
 * @packageDocumentation
 * @module microbatch/onnx
 */
export { loadSession, SESSION_DEFAULTS } from './load-session';
export type { LoadSessionOptions, ModelSource } from './load-session';
export { describeModel } from './describe-model';
export type { BatchAxis, DescribeModelOptions, ModelDescription, SessionMetadata, TensorDescription, UnbatchableReason } from './describe-model';
export { ModelLoadError, UnbatchableModelError } from './errors';
export { createOnnxHost } from './create-onnx-host';
export type { ModelReloadOptions, OnnxFeeds, OnnxHost, OnnxHostOptions, OnnxResults } from './create-onnx-host';
export { createServingHost } from './serving-host';
export type { ServingHost, ServingHostOptions } from './serving-host';
// OnnxHost and ServingHost are ModelHosts: their reference pages link its members.
export type { ModelHost } from '../engine/model-host';
