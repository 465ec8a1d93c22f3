import { resolve } from 'node:path';
import type { Tensor } from 'onnxruntime-node';
import { fail } from '../core/options';
import { DTYPES, type TensorData, type TensorType } from '../tensor/dtypes';
import { describeModel, type ModelDescription } from './describe-model';
import { loadSession, type ModelSource } from './load-session';
import type { OnnxFeeds } from './onnx-host';

/** Whether `value` is a model file path or model bytes (what `loadSession` takes). @internal */
export function isModelSource(value: unknown): value is ModelSource {
  return typeof value === 'string' || ArrayBuffer.isView(value) || value instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer);
}

/** What makes a new model unfit for a host built for `old` (its batcher and checks), or `undefined`. @internal */
export function modelMisfit(old: ModelDescription, next: ModelDescription): string | undefined {
  // Fixed dims must match (the host checks requests against them); symbolic ones may be renamed.
  const sig = (ts: ModelDescription['inputs']): string =>
    ts.map((t) => `${t.name}: ${t.dtype}[${t.dims.map((d) => (typeof d === 'number' && d >= 0 ? d : '?')).join(',')}], batch axis ${String(t.batchAxis)}`).join('; ');
  if (sig(old.inputs) !== sig(next.inputs)) return `inputs were ${sig(old.inputs)}; now ${sig(next.inputs)}`;
  if (sig(old.outputs) !== sig(next.outputs)) return `outputs were ${sig(old.outputs)}; now ${sig(next.outputs)}`;
  return undefined;
}

/**
 * One request of zero-filled inputs for `warmup: true`: batch axis 1 (a `'shared'` input as
 * declared), every other symbolic dim 1.
 * @internal
 */
export function zeroFeeds(model: ModelDescription, tensor: (type: string, data: TensorData, dims: readonly number[]) => Tensor): OnnxFeeds {
  const feeds: OnnxFeeds = {};
  for (const input of model.inputs) {
    const dims = input.dims.map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
    const info = DTYPES[input.dtype as TensorType];
    if (info === undefined) throw new TypeError(`createOnnxHost: warmup: true cannot make a sample for input "${input.name}" of type ${input.dtype}; pass warmup: { samples }`);
    feeds[input.name] = tensor(input.dtype, info.make(dims.reduce((a, b) => a * b, 1)) as TensorData, dims);
  }
  return feeds;
}

/**
 * The model's metadata, read on this thread (to check requests and build the batcher); the
 * session is then let go, since the workers open their own.
 * @internal
 */
export async function probeModel(path: string): Promise<ModelDescription> {
  const probe = await loadSession(path, { intraOpNumThreads: 1 });
  try {
    return describeModel(probe);
  } finally {
    await probe.release();
  }
}

/** A reload's model file as an absolute path; workers load models by path, so bytes are refused. @internal */
export function checkedPath(where: string, file: unknown): string {
  if (typeof file !== 'string' || file === '') fail(where, 'modelPath', 'the path of an .onnx file (a serving host loads models by path)', file);
  return resolve(file);
}
