import { availableParallelism } from 'node:os';
import { basename, resolve } from 'node:path';
import type { Tensor } from 'onnxruntime-node';
import type { ModelHost } from '../engine/model-host';
import { DictBatcher } from '../batchers/dict-batcher';
import type { Batcher } from '../core/batcher';
import type { HostOptions } from '../core/options';
import { createWorkerHost } from '../api/create-worker-host';
import { createOnnxHost, modelMisfit, zeroFeeds, type OnnxFeeds, type OnnxResults } from './create-onnx-host';
import { checkReloadOptions, type ReloadOptions } from '../engine/executor-swap';
import { fail, type WarmupOptions } from '../core/options';
import { WorkerExecutor } from '../executors/worker/worker-executor';
import type { WorkerExecutorOptions } from '../executors/worker/options';
import { describeModel, type ModelDescription } from './describe-model';
import { UnbatchableModelError } from './errors';
import { loadSession, SPINNING } from './load-session';
import { loadOrt } from './runtime';
import type { TensorData } from '../tensor/dtypes';
import { describe } from '../core/describe';
import { dedicatedMachineThreads, sharedMachineThreads } from '../executors/worker/thread-budget';
import type { OnnxWorkerData } from './onnx.worker';

/** Options of {@link createServingHost}: the host's limits plus where the model runs. */
export interface ServingHostOptions extends Omit<HostOptions<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults>, 'batcher' | 'maxConcurrentBatches' | 'warmup'> {
  /**
   * Batches to run before the host is returned (see `HostOptions.warmup`); `true` makes the
   * samples from the model's metadata (zeros), as `createOnnxHost`'s `warmup: true` does. Each
   * worker's session is warmed by the batches it happens to run.
   * @default no warm-up
   */
  warmup?: WarmupOptions<OnnxFeeds> | true;
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
  /** The model file serving now (after a reload, the new one). */
  readonly modelPath: string;
  /**
   * Loads a new version of the model file and swaps it in without stopping (see
   * `ModelHost.reload`): new workers (or a new session) start and warm up beside the serving ones,
   * later batches run on them, and the old ones stop once their batches have delivered. The new
   * model must have the same inputs and outputs as the current one, or the reload is refused with
   * a `TypeError` and the current model keeps serving.
   *
   * @example
   * ```ts
   * await host.reload('models/classifier-v2.onnx', { version: '2' });
   * ```
   */
  reload(modelPath: string, options?: ReloadOptions): Promise<void>;
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
  const { workers = 1, threads, machine = 'shared', warmup, ...hostOptions } = options;
  if (!Number.isInteger(workers) || workers < 0) throw new RangeError(`createServingHost: \`workers\` must be an integer >= 0, got ${String(workers)}`);
  if (machine !== 'shared' && machine !== 'dedicated') throw new TypeError(`createServingHost: expected \`machine\` to be 'shared' or 'dedicated', got ${describe(machine)}`);
  const dedicated = machine === 'dedicated';
  const intra = threads ?? (dedicated ? dedicatedMachineThreads : sharedMachineThreads)(availableParallelism(), workers);
  const path = resolve(modelPath);
  const name = hostOptions.name ?? basename(path).replace(/\.onnx$/i, '');
  if (workers === 0) {
    const host = await createOnnxHost(path, {
      ...hostOptions,
      ...(warmup === undefined ? {} : { warmup }),
      name,
      session: { intraOpNumThreads: intra, ...(dedicated ? { extra: SPINNING } : {}) },
    });
    const reloadSession = host.reload.bind(host);
    let current = path;
    const reload = async (next: string, reloadOptions?: ReloadOptions): Promise<void> => {
      const file = checkedPath(`${name}.reload`, next);
      await reloadSession(file, reloadOptions);
      current = file;
    };
    Object.defineProperties(host, {
      executor: { value: 'inline', enumerable: true },
      workers: { value: 0, enumerable: true },
      threads: { value: intra, enumerable: true },
      machine: { value: machine, enumerable: true },
      modelPath: { get: () => current, enumerable: true },
      reload: { value: reload, enumerable: false },
    });
    return host as unknown as ServingHost;
  }

  let model = await probeModel(path);
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
  const pool = (file: string): WorkerExecutorOptions<OnnxWorkerData> => ({
    name,
    module: require.resolve('./onnx.worker'),
    workers,
    intraOpNumThreads: intra,
    workerData: { modelPath: file, ...(dedicated ? { spinning: true } : {}) },
    // The DictBatcher builds fresh batch tensors for batched inputs, but 'shared' inputs are the
    // callers' own arrays: copy rather than move.
    transferBatch: false,
    // The pool can replace a hung worker; the host alone could only abandon it.
    ...(hostOptions.batchTimeoutMs === undefined ? {} : { batchTimeoutMs: hostOptions.batchTimeoutMs }),
  });
  const generated = warmup === true ? { warmup: { samples: [zeroFeeds(model, tensor)] } } : warmup === undefined ? {} : { warmup };
  const host = await createWorkerHost<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults, OnnxWorkerData>({ ...hostOptions, ...generated, ...pool(path), batcher });
  let current = path;
  const reloadExecutor = host.reload.bind(host);
  const reload = async (next: string, reloadOptions: ReloadOptions = {}): Promise<void> => {
    const where = `${name}.reload`;
    const file = checkedPath(where, next);
    checkReloadOptions(where, reloadOptions);
    const nextModel = await probeModel(file);
    const misfit = modelMisfit(model, nextModel);
    if (misfit !== undefined) throw new TypeError(`${where}: the new model does not fit the host made for the current one (${misfit}); make a new host for it`);
    await reloadExecutor(new WorkerExecutor<OnnxFeeds, OnnxResults>(pool(file)), reloadOptions);
    model = nextModel;
    current = file;
  };
  Object.defineProperties(host, {
    model: { get: () => model, enumerable: true },
    executor: { value: 'worker', enumerable: true },
    workers: { value: workers, enumerable: true },
    threads: { value: intra, enumerable: true },
    machine: { value: machine, enumerable: true },
    modelPath: { get: () => current, enumerable: true },
    reload: { value: reload, enumerable: false },
  });
  return host as ServingHost;
}

/**
 * The model's metadata, read on this thread (to check requests and build the batcher); the
 * session is then let go, since the workers open their own.
 */
async function probeModel(path: string): Promise<ModelDescription> {
  const probe = await loadSession(path, { intraOpNumThreads: 1 });
  try {
    return describeModel(probe);
  } finally {
    await probe.release();
  }
}

/** A reload's model file as an absolute path; workers load models by path, so bytes are refused. */
function checkedPath(where: string, file: unknown): string {
  if (typeof file !== 'string' || file === '') fail(where, 'modelPath', 'the path of an .onnx file (a serving host loads models by path)', file);
  return resolve(file);
}
