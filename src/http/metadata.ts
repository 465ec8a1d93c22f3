import { kserveDatatype } from './datatypes';
import type { ServableModel, ServedTensor } from './options';

/** One tensor in a metadata answer. */
export interface TensorMetadata {
  /** The input or output name. */
  readonly name: string;
  /** The KServe datatype (`'FP32'`...), or the raw type when the protocol has no name for it. */
  readonly datatype: string;
  /** Declared shape; `-1` marks a dynamic axis (KServe's convention). */
  readonly shape: readonly number[];
  /** The declared dims with the symbolic names kept (`['N', 4]`). */
  readonly dims: ReadonlyArray<number | string>;
  /** The axis requests are batched along, or `'shared'`. */
  readonly batch_axis: number | 'shared';
}

/** The answer of `GET /v1/models/:name` (KServe v2 model metadata, with microbatch's additions). */
export interface ModelMetadata {
  readonly name: string;
  readonly platform: string;
  readonly max_batch_size: number | null;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

function tensor(t: ServedTensor): TensorMetadata {
  return {
    name: t.name,
    datatype: kserveDatatype(t.dtype) ?? t.dtype,
    shape: t.dims.map((d) => (typeof d === 'number' ? d : -1)),
    dims: t.dims,
    batch_axis: t.batchAxis,
  };
}

/** Builds the metadata answer for a model. @internal */
export function modelMetadata(name: string, host: ServableModel): ModelMetadata {
  return {
    name,
    platform: 'microbatch',
    max_batch_size: host.options?.maxBatchSize ?? null,
    inputs: host.model.inputs.map(tensor),
    outputs: host.model.outputs.map(tensor),
  };
}
