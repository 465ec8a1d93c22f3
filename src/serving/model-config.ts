import { HOST_DEFAULTS } from '../core/defaults';
import { kserveDatatype } from './datatypes';
import { DEFAULT_PLATFORM } from './metadata';
import type { TensorSignature } from '../core/servable';
import type { InferenceServable } from './servables';
import { repositoryInfo } from './repository-control';

/** One input or output in a {@link ModelConfig}, as Triton's model configuration writes it. */
export interface ModelConfigTensor {
  readonly name: string;
  /** Triton's type name: `TYPE_FP32`, `TYPE_INT64`, `TYPE_STRING`... */
  readonly data_type: string;
  /** The dims without the batch axis (Triton's convention when `max_batch_size` > 0); `-1` is dynamic. */
  readonly dims: readonly number[];
  /** The axis requests are batched along, or `'shared'` (then `dims` is the whole shape); a microbatch addition. */
  readonly batch_axis: number | 'shared';
}

/** Triton's `version_policy`: one of its three members. */
export type ModelConfigVersionPolicy =
  | { readonly latest: { readonly num_versions: number } }
  | { readonly all: Record<string, never> }
  | { readonly specific: { readonly versions: readonly number[] } };

/** A queue policy in a {@link ModelConfig}. */
export interface ModelConfigQueuePolicy {
  readonly max_queue_size?: number;
  readonly default_timeout_microseconds?: number;
  readonly timeout_action?: 'REJECT';
}

/** `dynamic_batching` of a {@link ModelConfig}: the host's batching settings in force. */
export interface ModelConfigBatching {
  /** The host's `maxDelayMs`, in microseconds. */
  readonly max_queue_delay_microseconds: number;
  /** The host's `preferredBatchSizes`, when it has some. */
  readonly preferred_batch_size?: readonly number[];
  /** The host's `maxQueueSize` (0: unbounded, Triton's convention) and `timeoutMs` (in microseconds, when it has one). */
  readonly default_queue_policy: ModelConfigQueuePolicy;
  readonly priority_levels?: number;
  readonly default_priority_level?: number;
  readonly priority_queue_policy?: Readonly<Record<string, ModelConfigQueuePolicy>>;
}

/**
 * The answer of `GET /v2/models/{name}/config`: the model in the shape of Triton's model
 * configuration, with the host's batching settings in force as `dynamic_batching`. A model from a
 * repository also shows its `version_policy`, `instance_group` and microbatch `parameters`.
 */
export interface ModelConfig {
  readonly name: string;
  readonly platform: string;
  readonly version_policy: ModelConfigVersionPolicy;
  readonly max_batch_size: number;
  readonly input: readonly ModelConfigTensor[];
  readonly output: readonly ModelConfigTensor[];
  readonly dynamic_batching: ModelConfigBatching;
  /** The worker threads running the model, as Triton's CPU instances. */
  readonly instance_group?: ReadonlyArray<{ readonly count: number; readonly kind: 'KIND_CPU' }>;
  /** microbatch's own settings, as Triton's `parameters` map. */
  readonly parameters?: Readonly<Record<string, { readonly string_value: string }>>;
}


function tritonType(dtype: string): string {
  const datatype = kserveDatatype(dtype);
  if (datatype === undefined) return `TYPE_${dtype.toUpperCase()}`;
  return datatype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${datatype}`;
}

function configTensor(t: TensorSignature): ModelConfigTensor {
  const dims = t.dims.map((d) => (typeof d === 'number' ? d : -1));
  return { name: t.name, data_type: tritonType(t.dtype), dims: t.batchAxis === 'shared' ? dims : dims.filter((_, i) => i !== t.batchAxis), batch_axis: t.batchAxis };
}

/** Builds the config answer for a model. @internal */
export function modelConfig(name: string, host: InferenceServable): ModelConfig {
  const o = host.options;
  const queue = o?.maxQueueSize ?? HOST_DEFAULTS.maxQueueSize;
  const timeout = o?.timeoutMs ?? HOST_DEFAULTS.timeoutMs;
  const extra = repositoryInfo(host)?.config;
  // The live options (a host may have been reconfigured) over what the repository's config said.
  return {
    name,
    platform: host.model.platform ?? DEFAULT_PLATFORM,
    version_policy: extra?.version_policy ?? { latest: { num_versions: 1 } },
    max_batch_size: o?.maxBatchSize ?? 0,
    input: host.model.inputs.map(configTensor),
    output: host.model.outputs.map(configTensor),
    dynamic_batching: {
      ...extra?.dynamic_batching,
      max_queue_delay_microseconds: Math.round((o?.maxDelayMs ?? HOST_DEFAULTS.maxDelayMs) * 1000),
      default_queue_policy: { max_queue_size: Number.isFinite(queue) ? queue : 0, ...(Number.isFinite(timeout) ? { default_timeout_microseconds: Math.round(timeout * 1000) } : {}) },
    },
    ...(extra?.instance_group === undefined ? {} : { instance_group: extra.instance_group }),
    ...(extra?.parameters === undefined ? {} : { parameters: extra.parameters }),
  };
}
