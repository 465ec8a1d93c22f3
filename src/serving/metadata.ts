import { kserveDatatype } from './datatypes';
import type { TensorSignature } from '../core/servable';
import { ServingError } from './errors';
import { packageVersion } from '../core/package-version';
import { servedVersion, type InferenceServable } from './servables';
import { repositoryInfo } from './repository-control';

/** The protocol extensions `GET /v2` lists (Triton's names, for what this server implements). */
export const SERVER_EXTENSIONS: readonly string[] = ['binary_tensor_data', 'model_configuration', 'statistics'];

/** The platform a generative model reports: microbatch's own, since the protocol has none for it. */
export const GENERATION_PLATFORM = 'microbatch_generation';

/** The metadata of a generative model: token ids in, token ids out. @internal */
export function generatorMetadata(name: string, version: string, maxBatchSize: number | null): ModelMetadata {
  const ids = (n: string): TensorMetadata => ({ name: n, datatype: 'INT64', shape: [-1], dims: ['T'], batch_axis: 'shared' });
  return { name, versions: [version], platform: GENERATION_PLATFORM, max_batch_size: maxBatchSize, inputs: [ids('input_ids')], outputs: [ids('output_ids')] };
}

/** One tensor in a metadata answer. */
export interface TensorMetadata {
  /** The input or output name. */
  readonly name: string;
  /** The protocol's datatype (`'FP32'`...), or the raw type when the protocol has no name for it. */
  readonly datatype: string;
  /** Declared shape; `-1` marks a dynamic axis (the protocol's convention). */
  readonly shape: readonly number[];
  /** The declared dims with the symbolic names kept (`['N', 4]`); a microbatch addition. */
  readonly dims: ReadonlyArray<number | string>;
  /** The axis requests are batched along, or `'shared'`; a microbatch addition. */
  readonly batch_axis: number | 'shared';
}

/**
 * The answer of `GET /v2/models/{name}`: the Open Inference Protocol's model metadata, with
 * microbatch's additions (`max_batch_size`, and `dims`/`batch_axis` per tensor).
 */
export interface ModelMetadata {
  readonly name: string;
  /** The versions the `versions/{v}` paths accept: the one serving now (`["1"]` before any reload), or every version a repository serves. */
  readonly versions: readonly string[];
  /** `<framework>_<format>`, e.g. `'onnxruntime_onnx'`. */
  readonly platform: string;
  readonly max_batch_size: number | null;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

/** The answer of `GET /v2`: the protocol's server metadata. */
export interface ServerMetadata {
  /** `'microbatch'`. */
  readonly name: string;
  /** The package version. */
  readonly version: string;
  /** The protocol extensions this server supports. */
  readonly extensions: readonly string[];
}

/** The platform of a model that names none: hosts from `microbatch/onnx` run ONNX on onnxruntime. */
export const DEFAULT_PLATFORM = 'onnxruntime_onnx';

function tensor(t: TensorSignature): TensorMetadata {
  return {
    name: t.name,
    datatype: kserveDatatype(t.dtype) ?? t.dtype,
    shape: t.dims.map((d) => (typeof d === 'number' ? d : -1)),
    dims: t.dims,
    batch_axis: t.batchAxis,
  };
}

/** Builds the metadata answer for a model. @internal */
export function modelMetadata(name: string, host: InferenceServable): ModelMetadata {
  return {
    name,
    versions: repositoryInfo(host)?.servedVersions() ?? [servedVersion(host)],
    platform: host.model.platform ?? DEFAULT_PLATFORM,
    max_batch_size: host.options?.maxBatchSize ?? null,
    inputs: host.model.inputs.map(tensor),
    outputs: host.model.outputs.map(tensor),
  };
}

/**
 * Builds the server metadata answer; with `repository` (a model repository fills the registry),
 * Triton's `model_repository` extension is listed too. @internal
 */
export function serverMetadata(repository = false): ServerMetadata {
  return { name: 'microbatch', version: packageVersion(), extensions: repository ? [...SERVER_EXTENSIONS, 'model_repository'] : SERVER_EXTENSIONS };
}

/** Throws the `'not-found'` error for a request naming a version other than the served one. @internal */
export function checkVersion(model: string, version: string | undefined, served: string): void {
  if (version === undefined || version === served) return;
  throw new ServingError('not-found', 'model_version_not_found', `model ${JSON.stringify(model)} has no version ${JSON.stringify(version)}; its version is ${JSON.stringify(served)}`);
}
