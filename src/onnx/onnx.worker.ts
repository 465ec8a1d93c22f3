/**
 * The worker module of {@link createServingHost}: each worker thread opens its own onnxruntime
 * session on the model file and runs the merged feeds of a batch. `workerData` names the model and
 * the outputs to compute.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { WorkerContext } from '../executors/worker';
import { loadSession, SPINNING } from './load-session';
import { loadOrt } from './runtime';
import type { TensorLike } from '../tensor/tensor-like';

/** What the worker is told. @internal */
export interface OnnxWorkerData {
  /** Absolute path of the model file. */
  readonly modelPath: string;
  /** Outputs to compute; all when absent. */
  readonly outputs?: readonly string[];
  /** The `'dedicated'` machine preset: let the session's pool threads spin between runs. */
  readonly spinning?: boolean;
}

/** Opens the session in this worker and returns the batch runner. @internal */
export default async function onnxWorker(ctx: WorkerContext<OnnxWorkerData>) {
  const ort = loadOrt();
  const threads = ctx.intraOpNumThreads;
  const session: InferenceSession = await loadSession(ctx.workerData.modelPath, {
    ...(threads === undefined ? {} : { intraOpNumThreads: threads }),
    ...(ctx.workerData.spinning === true ? { extra: SPINNING } : {}),
  });
  const fetches = ctx.workerData.outputs === undefined ? undefined : [...ctx.workerData.outputs];
  return {
    async run(feeds: Record<string, TensorLike>): Promise<Record<string, Tensor>> {
      // Batched inputs arrive as onnxruntime Tensors (rebuilt after the crossing); 'shared' inputs
      // may be plain { type, data, dims }, which session.run does not take.
      const wrapped: Record<string, Tensor> = {};
      for (const [name, t] of Object.entries(feeds)) {
        wrapped[name] = t instanceof ort.Tensor ? t : new ort.Tensor(t.type as Tensor.Type, t.data as Tensor.DataType, t.dims);
      }
      return fetches === undefined ? session.run(wrapped) : session.run(wrapped, fetches);
    },
    stop: () => session.release(),
    // session.run keeps nothing of its feeds once it resolves.
    returnsBatch: true,
  };
}
