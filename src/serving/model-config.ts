import { HOST_DEFAULTS } from '../core/defaults';
import { kserveDatatype } from './datatypes';
import { DEFAULT_PLATFORM } from './metadata';
import type { TensorSignature } from '../core/servable';
import type { InferenceServable } from './servables';

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

/**
 * The answer of `GET /v2/models/{name}/config`: the model in the shape of Triton's model
 * configuration, with the host's batching settings as `dynamic_batching`.
 */
export interface ModelConfig {
  readonly name: string;
  readonly platform: string;
  readonly version_policy: { readonly latest: { readonly num_versions: number } };
  readonly max_batch_size: number;
  readonly input: readonly ModelConfigTensor[];
  readonly output: readonly ModelConfigTensor[];
  /** The host's `maxDelayMs` in microseconds, and its `maxQueueSize` (0: unbounded, Triton's convention). */
  readonly dynamic_batching: {
    readonly max_queue_delay_microseconds: number;
    readonly default_queue_policy: { readonly max_queue_size: number };
  };
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
  return {
    name,
    platform: host.model.platform ?? DEFAULT_PLATFORM,
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: o?.maxBatchSize ?? 0,
    input: host.model.inputs.map(configTensor),
    output: host.model.outputs.map(configTensor),
    dynamic_batching: {
      max_queue_delay_microseconds: Math.round((o?.maxDelayMs ?? HOST_DEFAULTS.maxDelayMs) * 1000),
      default_queue_policy: { max_queue_size: Number.isFinite(queue) ? queue : 0 },
    },
  };
}
