import type { Tensor } from 'onnxruntime-node';
import { DictBatcher } from '../batchers/dict-batcher';
import type { Batcher } from '../core/batcher';
import type { HostOptions, WarmupOptions } from '../core/options';
import type { ReloadOptions } from '../executors/executor';
import type { WorkerExecutorOptions } from '../executors/worker/options';
import { SuccessivePool } from '../api/hosted-model';
import { started } from '../engine/start-host';
import type { TensorData } from '../tensor/dtypes';
import type { ModelDescription } from './describe-model';
import { UnbatchableModelError } from './errors';
import { checkedPath, modelMisfit, probeModel, zeroFeeds } from './model-fit';
import { ServingHost, type OnnxFeeds, type OnnxResults, type ServingPlacement } from './onnx-host';
import type { OnnxWorkerData } from './onnx.worker';
import { loadOrt } from './runtime';

/** Host options of an ONNX model served in worker threads. @internal */
export type WorkerServedOptions = Omit<HostOptions<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults>, 'batcher' | 'warmup'> & { warmup?: WarmupOptions<OnnxFeeds> | true };

/**
 * A pool of workers that each load one model file: it shows the model to the host, and its
 * successor (a reload) is a pool for the next file, checked to fit the host made for this one.
 */
class OnnxPool extends SuccessivePool<OnnxFeeds, OnnxResults> {
  constructor(
    options: WorkerExecutorOptions,
    next: (file: unknown, options: ReloadOptions) => Promise<OnnxPool>,
    readonly model: ModelDescription,
    readonly modelPath: string,
  ) {
    super(options, next);
  }
}

/**
 * An ONNX model file in a started host whose batches run in `placement.workers` worker threads,
 * each with its own session: what `createOnnxHost(path, { workers })` builds.
 * @internal
 */
export async function onnxHostInWorkers(where: string, path: string, options: WorkerServedOptions, placement: ServingPlacement): Promise<ServingHost> {
  const { warmup, ...hostOptions } = options;
  const name = hostOptions.name ?? 'onnx-model';
  const model = await probeModel(path);
  const ort = loadOrt();
  const tensor = (type: string, data: TensorData, dims: readonly number[]): Tensor => new ort.Tensor(type as Tensor.Type, data as Tensor.DataType, dims);
  let batcher: Batcher<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults, unknown>;
  if (model.unbatchable !== undefined) {
    if (hostOptions.maxBatchSize !== 1) {
      const { input, dims, message } = model.unbatchable;
      throw new UnbatchableModelError(`${where}: the model cannot take batches: ${message}. Use a maxBatchSize of 1 to serve it unbatched.`, input, dims);
    }
    batcher = { merge: (items) => ({ batch: items[0] as OnnxFeeds, ctx: undefined }), split: (output) => [output] };
  } else {
    batcher = new DictBatcher<OnnxFeeds, OnnxResults>({
      inputs: Object.fromEntries(model.inputs.map((t) => [t.name, t.batchAxis])),
      outputs: Object.fromEntries(model.outputs.map((t) => [t.name, t.batchAxis])),
      tensor,
    });
  }
  const poolFor = (file: string, fileModel: ModelDescription): OnnxPool => new OnnxPool(
    {
      name,
      module: require.resolve('./onnx.worker'),
      workers: placement.workers,
      intraOpNumThreads: placement.threads,
      workerData: { modelPath: file, ...(placement.machine === 'dedicated' ? { spinning: true } : {}) } satisfies OnnxWorkerData,
      // The DictBatcher builds fresh batch tensors for batched inputs: those move to the worker
      // (no copy on either thread). 'shared' inputs, and an unbatchable model's feeds, are the
      // callers' own arrays, which moving would empty under their feet: copied.
      transferBatch: fileModel.unbatchable === undefined && fileModel.inputs.every((t) => typeof t.batchAxis === 'number'),
      // The pool can replace a hung worker; the host alone could only abandon it.
      ...(hostOptions.batchTimeoutMs === undefined ? {} : { batchTimeoutMs: hostOptions.batchTimeoutMs }),
    },
    async (next) => {
      const at = `${name}.reload`;
      const nextFile = checkedPath(at, next);
      const nextModel = await probeModel(nextFile);
      const misfit = modelMisfit(fileModel, nextModel);
      if (misfit !== undefined) throw new TypeError(`${at}: the new model does not fit the host made for the current one (${misfit}); make a new host for it`);
      return poolFor(nextFile, nextModel);
    },
    fileModel,
    file,
  );
  const pool = poolFor(path, model);
  const generated = warmup === true ? { warmup: { samples: [zeroFeeds(model, tensor)] } } : warmup === undefined ? {} : { warmup };
  // batchTimeoutMs went to the pool alone (above); up to one batch per worker runs at once.
  const { batchTimeoutMs: _pools, ...rest } = hostOptions as WorkerServedOptions & { maxConcurrentBatches?: number };
  return started(new ServingHost(pool, { ...rest, ...generated, batcher, maxConcurrentBatches: rest.maxConcurrentBatches ?? pool.workers } as never, placement));
}
