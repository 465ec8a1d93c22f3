import { availableParallelism } from 'node:os';
import { basename, resolve } from 'node:path';
import type { Tensor } from 'onnxruntime-node';
import type { ModelHost } from '../engine/model-host';
import { DictBatcher } from '../batchers/dict-batcher';
import type { Batcher } from '../core/batcher';
import type { HostOptions } from '../core/options';
import { createWorkerHost } from '../api/create-worker-host';
import { createOnnxHost, type OnnxFeeds, type OnnxResults } from './create-onnx-host';
import { describeModel, type ModelDescription } from './describe-model';
import { UnbatchableModelError } from './errors';
import { loadSession, SPINNING } from './load-session';
import { loadOrt } from './runtime';
import type { TensorData } from '../tensor/dtypes';
import { describe } from '../core/describe';
import { dedicatedMachineThreads, sharedMachineThreads } from '../executors/worker/thread-budget';
import type { OnnxWorkerData } from './onnx.worker';

/** Options of {@link createServingHost}: the host's limits plus where the model runs. */
export interface ServingHostOptions extends Omit<HostOptions<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults>, 'batcher' | 'maxConcurrentBatches'> {
  /**
   * Worker threads, each with its own session; `0` runs the model on the calling thread (simpler,
   * but `session.run()` then blocks the event loop, and with it every HTTP connection, for the
   * whole inference).
   * @default 1
   */
  workers?: number;
  /**
   * onnxruntime intra-op threads per session. Keep `workers × threads ≤ cores`.
   * @default `'shared'`: max(1, floor((cores − 1) / max(1, workers))); `'dedicated'`: max(1, floor(cores / max(1, workers)))
   */
  threads?: number;
  /**
   * How the machine is shared. `'shared'` leaves the event loop a core and turns onnxruntime's
   * spin-waiting off: robust when anything else runs (other processes, the HTTP work of this one).
   * `'dedicated'` gives the model every core and lets its pool threads spin between runs: measured
   * 1.15–1.38× the throughput on an otherwise idle 2-core machine, but 0.3–0.6× when other work
   * competes for the cores (docs/onnx.md, "Threads"). Choose it only for a machine that runs
   * nothing else.
   * @default 'shared'
   */
  machine?: 'shared' | 'dedicated';
}

/** A host made by {@link createServingHost}: a started `ModelHost` that shows its model. */
export type ServingHost = ModelHost<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults> & {
  /** The model's inputs and outputs with their batch axes. */
  readonly model: ModelDescription;
  /** Where the model runs: `'worker'` threads or `'inline'` (the calling thread). */
  readonly executor: 'worker' | 'inline';
  /** Worker threads (0 when inline). */
  readonly workers: number;
  /** onnxruntime intra-op threads per session. */
  readonly threads: number;
  /** The machine preset it was made with. */
  readonly machine: 'shared' | 'dedicated';
};

/**
 * Loads an ONNX model file into a started batching host, in worker threads by default, which is
 * what a server wants: the event loop keeps accepting and answering connections while the model
 * runs. This is what `microbatch serve` and the `npm start` demo use.
 *
 * @example
 * ```ts
 * const host = await createServingHost('model.onnx', { maxBatchSize: 32, maxQueueSize: 256, workers: 1, threads: 2 });
 * createInferenceServer({ models: { model: host } });
 * ```
 */
export async function createServingHost(modelPath: string, options: ServingHostOptions): Promise<ServingHost> {
  const { workers = 1, threads, machine = 'shared', ...hostOptions } = options;
  if (!Number.isInteger(workers) || workers < 0) throw new RangeError(`createServingHost: \`workers\` must be an integer >= 0, got ${String(workers)}`);
  if (machine !== 'shared' && machine !== 'dedicated') throw new TypeError(`createServingHost: expected \`machine\` to be 'shared' or 'dedicated', got ${describe(machine)}`);
  const dedicated = machine === 'dedicated';
  const intra = threads ?? (dedicated ? dedicatedMachineThreads : sharedMachineThreads)(availableParallelism(), workers);
  const path = resolve(modelPath);
  const name = hostOptions.name ?? basename(path).replace(/\.onnx$/i, '');
  if (workers === 0) {
    const host = await createOnnxHost(path, { ...hostOptions, name, session: { intraOpNumThreads: intra, ...(dedicated ? { extra: SPINNING } : {}) } });
    Object.defineProperties(host, {
      executor: { value: 'inline', enumerable: true },
      workers: { value: 0, enumerable: true },
      threads: { value: intra, enumerable: true },
      machine: { value: machine, enumerable: true },
    });
    return host as unknown as ServingHost;
  }

  // The main thread reads the model's metadata once (to check requests and build the batcher),
  // then lets the session go: the workers open their own.
  const probe = await loadSession(path, { intraOpNumThreads: 1 });
  let model: ModelDescription;
  try {
    model = describeModel(probe);
  } finally {
    await probe.release();
  }
  const ort = loadOrt();
  const tensor = (type: string, data: TensorData, dims: readonly number[]): Tensor => new ort.Tensor(type as Tensor.Type, data as Tensor.DataType, dims);
  let batcher: Batcher<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults, unknown>;
  if (model.unbatchable !== undefined) {
    if (hostOptions.maxBatchSize !== 1) {
      const { input, dims, message } = model.unbatchable;
      throw new UnbatchableModelError(`createServingHost: the model cannot take batches: ${message}. Use a maxBatchSize of 1 to serve it unbatched.`, input, dims);
    }
    batcher = { merge: (items) => ({ batch: items[0] as OnnxFeeds, ctx: undefined }), split: (output) => [output] };
  } else {
    batcher = new DictBatcher<OnnxFeeds, OnnxResults>({
      inputs: Object.fromEntries(model.inputs.map((t) => [t.name, t.batchAxis])),
      outputs: Object.fromEntries(model.outputs.map((t) => [t.name, t.batchAxis])),
      tensor,
    });
  }
  const workerData: OnnxWorkerData = { modelPath: path, ...(dedicated ? { spinning: true } : {}) };
  const host = await createWorkerHost<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults, OnnxWorkerData>({
    ...hostOptions,
    name,
    batcher,
    module: require.resolve('./onnx.worker'),
    workers,
    intraOpNumThreads: intra,
    workerData,
    // The DictBatcher builds fresh batch tensors for batched inputs, but 'shared' inputs are the
    // callers' own arrays: copy rather than move.
    transferBatch: false,
  });
  Object.defineProperties(host, {
    model: { value: model, enumerable: true },
    executor: { value: 'worker', enumerable: true },
    workers: { value: workers, enumerable: true },
    threads: { value: intra, enumerable: true },
    machine: { value: machine, enumerable: true },
  });
  return host as ServingHost;
}
