/**
 * Loaded in each worker thread of side (c): its own session of the bench model, running the
 * batches that ConcatBatcher formed on the main thread.
 */
import * as ort from 'onnxruntime-node';
import type { WorkerContext } from '../src';
import type { TensorLike } from '../src';
import { loadSession } from '../src/onnx/load-session';
import { CLS_PATH, mlpBytes, wideMlpBytes } from './models';

export default async function benchModel(ctx: WorkerContext<{ model: 'mlp' | 'cls' | 'wide' }>) {
  const source = ctx.workerData.model === 'cls' ? CLS_PATH : ctx.workerData.model === 'wide' ? wideMlpBytes() : mlpBytes();
  const session = await loadSession(source, ctx.intraOpNumThreads === undefined ? {} : { intraOpNumThreads: ctx.intraOpNumThreads });
  const [input, output] = [session.inputNames[0] as string, session.outputNames[0] as string];
  return {
    run: async (batch: TensorLike) => (await session.run({ [input]: new ort.Tensor('float32', batch.data as Float32Array, batch.dims) }))[output],
    stop: () => session.release(),
  };
}
