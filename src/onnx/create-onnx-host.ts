import { availableParallelism } from 'node:os';
import { basename, resolve } from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { started } from '../engine/start-host';
import { DictBatcher } from '../batchers/dict-batcher';
import type { Batcher } from '../core/batcher';
import { describe } from '../core/describe';
import { defaultWarmupSizes, fail, HOST_OPTION_KEYS, optionKeys, deriveOptions, resolveOptions, type HostOptions, type WarmupOptions } from '../core/options';
import { toExecutor, type Executor } from '../executors/executor';
import { dedicatedMachineThreads, sharedMachineThreads } from '../executors/worker/thread-budget';
import type { TensorData } from '../tensor/dtypes';
import { describeModel, type BatchAxis, type ModelDescription } from './describe-model';
import { UnbatchableModelError } from './errors';
import { loadSession, SPINNING, type LoadSessionOptions, type ModelSource } from './load-session';
import { checkedPath, isModelSource, modelMisfit, zeroFeeds } from './model-fit';
import { OnnxHost, ServingHost, type ModelReloadOptions, type OnnxFeeds, type OnnxResults, type OnnxShown, type ServingPlacement } from './onnx-host';
import { onnxHostInWorkers } from './onnx-workers';
import { loadOrt } from './runtime';

export { isModelSource, modelMisfit, zeroFeeds } from './model-fit';
export { OnnxHost, ServingHost, type ModelReloadOptions, type OnnxFeeds, type OnnxResults } from './onnx-host';

/** Options of {@link createOnnxHost}: the host's options plus how to load and batch the model. */
export interface OnnxHostOptions extends Omit<HostOptions<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults>, 'batcher' | 'warmup'> {
  /**
   * Batches to run before the host is returned (see `HostOptions.warmup`). `true` makes the
   * samples from the model's metadata: one request of zero-filled inputs, batch axis 1, every
   * other symbolic dim 1, run at batch sizes 1, 2, 4, … and `maxBatchSize`. A model whose cost
   * depends on a symbolic size (an image's width, a sequence's length) warms up best with
   * samples of the real sizes: pass `{ samples }`.
   * @default none
   */
  warmup?: WarmupOptions<OnnxFeeds> | true;
  /**
   * Session options (execution providers, threads, graph optimization); see
   * {@link LoadSessionOptions}. With several hosts or workers in one process keep
   * `intraOpNumThreads × sessions ≤ cores`.
   * @default {@link SESSION_DEFAULTS} (cpu, graph optimization 'all'), and one intra-op thread per available CPU
   */
  session?: LoadSessionOptions;
  /**
   * Batch axes that {@link describeModel} should not guess, by input or output name.
   * @default {} (detect them all)
   * @example `{ batchAxes: { X: 1 } }`
   */
  batchAxes?: Readonly<Record<string, BatchAxis>>;
  /**
   * The outputs to compute and return, by name; the others are not computed.
   * @default every output of the model
   */
  outputs?: readonly string[];
  /**
   * How requests are merged and results split.
   * @default a `DictBatcher` with each input's and output's batch axis from {@link describeModel}
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  batcher?: Batcher<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults, any>;
  /**
   * Worker threads to run the model in, each with its own session (what a server wants: the event
   * loop keeps answering connections while the model runs); the model is then loaded by path, and
   * `session`, `outputs` and `batcher` are not taken. Given, the host is a {@link ServingHost}.
   * `0` runs the model on this thread with the thread budget of `threads` and `machine`.
   * @default 0 with `threads` or `machine`, else none: the model runs on this thread, with `session` as given
   */
  workers?: number;
  /**
   * onnxruntime intra-op threads per session (with `workers`). Keep `workers × threads ≤ cores`.
   * @default `'shared'`: max(1, floor((cores − 1) / max(1, workers))); `'dedicated'`: max(1, floor(cores / max(1, workers)))
   */
  threads?: number;
  /**
   * How the machine is shared (with `workers`). `'shared'` leaves the event loop a core and turns
   * onnxruntime's spin-waiting off: robust when anything else runs. `'dedicated'` gives the model
   * every core and lets its pool threads spin between runs (docs/onnx.md, "Threads"): choose it
   * only for a machine that runs nothing else.
   * @default 'shared'
   */
  machine?: 'shared' | 'dedicated';
}

const OWN_KEYS = optionKeys<Omit<OnnxHostOptions, keyof HostOptions<OnnxFeeds, OnnxResults>>>({ workers: true, threads: true, machine: true, session: true, batchAxes: true, outputs: true });

/**
 * Loads an ONNX model and returns a started batching host for it, in one call: concurrent
 * `inference(feeds)` calls are merged into one `session.run()` per batch by a `DictBatcher`
 * whose batch axis for each input and output comes from {@link describeModel} (`'shared'`
 * inputs, such as a sample rate, are passed once per batch and must be equal across it). Each
 * caller gets its own outputs, `{ name: Tensor }`, with its own rows. `host.stop()` drains the
 * queue, then releases the session.
 *
 * A model that cannot batch (its batch dimension is fixed to 1, or no input has a symbolic
 * dimension) is refused with an {@link UnbatchableModelError} naming the input and its dims,
 * unless `maxBatchSize` is 1: then every request runs alone, as it is.
 *
 * @param source - a model path or its bytes (see {@link loadSession}).
 * @param options - host options (`maxBatchSize` is required) and model options; see {@link OnnxHostOptions}.
 *
 * @example
 * ```ts
 * import { Tensor } from 'onnxruntime-node';
 * import { createOnnxHost } from 'microbatch/onnx';
 * const host = await createOnnxHost('classifier.onnx', { maxBatchSize: 32, session: { intraOpNumThreads: 2 } });
 * const { probs } = await host.inference({ x: new Tensor('float32', pixels, [1, 3, 48, 192]) });
 * await host.stop(); // releases the session
 * ```
 */
export async function createOnnxHost(source: ModelSource, options: OnnxHostOptions & { workers: number }): Promise<ServingHost>;
export async function createOnnxHost(source: ModelSource, options: OnnxHostOptions): Promise<OnnxHost>;
export async function createOnnxHost(source: ModelSource, options: OnnxHostOptions): Promise<OnnxHost> {
  const where = 'createOnnxHost';
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${where}: expected options to be an object with at least \`maxBatchSize\`, got ${describe(options)}`);
  }
  const known = [...HOST_OPTION_KEYS, ...OWN_KEYS];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`${where}: unknown option \`${key}\`; the known options are ${known.map((k) => `\`${k}\``).join(', ')}`);
  }
  if (options.workers === undefined && options.threads === undefined && options.machine === undefined) return onnxHostHere(where, source, options);
  for (const key of ['session', 'outputs', 'batcher'] as const) {
    if (options[key] !== undefined) throw new TypeError(`${where}: \`${key}\` cannot be used with \`workers\` (each worker loads its own session of the whole model); leave out one of them`);
  }
  if (typeof source !== 'string') fail(where, 'source', 'the path of an .onnx file (workers load models by path)', source);
  const { session: _session, outputs: _outputs, batcher: _batcher, ...rest } = options;
  return serveOnnxModel(where, source, { ...rest, workers: options.workers ?? 0, name: options.name ?? basename(source) });
}

/**
 * `createOnnxHost` and `createServingHost` (the deprecated name) with `workers`: in worker threads,
 * or with `workers: 0` on this thread, with the thread budget of `threads` and `machine`; reloads
 * take model paths.
 * @internal
 */
export async function serveOnnxModel(where: string, modelPath: string, options: Omit<OnnxHostOptions, 'session' | 'outputs' | 'batcher'>): Promise<ServingHost> {
  const { workers = 1, threads, machine = 'shared', ...hostOptions } = options;
  if (!Number.isInteger(workers) || workers < 0) throw new RangeError(`${where}: \`workers\` must be an integer >= 0, got ${String(workers)}`);
  if (machine !== 'shared' && machine !== 'dedicated') throw new TypeError(`${where}: expected \`machine\` to be 'shared' or 'dedicated', got ${describe(machine)}`);
  const dedicated = machine === 'dedicated';
  const intra = threads ?? (dedicated ? dedicatedMachineThreads : sharedMachineThreads)(availableParallelism(), workers);
  const path = resolve(modelPath);
  const placement: ServingPlacement = { executor: workers === 0 ? 'inline' : 'worker', workers, threads: intra, machine };
  if (workers > 0) return onnxHostInWorkers(where, path, hostOptions, placement);
  const session = { intraOpNumThreads: intra, ...(dedicated ? { extra: SPINNING } : {}) };
  return (await onnxHostHere(where, path, { ...hostOptions, session }, placement)) as ServingHost;
}

/** `createOnnxHost` on this thread; with `serving` (`workers: 0`), a {@link ServingHost} whose reloads take paths. */
async function onnxHostHere(where: string, source: ModelSource, options: OnnxHostOptions, placement?: ServingPlacement): Promise<OnnxHost> {
  const paths = placement === undefined ? undefined : checkedPath;
  const { session: sessionOptions, batchAxes, outputs, batcher: customBatcher, warmup, ...rest } = options;
  // `warmup: true` is made from the model below; samples given are checked with the rest now.
  const hostOptions: HostOptions<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults> = warmup === undefined || warmup === true ? rest : { ...rest, warmup };
  if (outputs !== undefined && (!Array.isArray(outputs) || outputs.some((o) => typeof o !== 'string'))) {
    throw new TypeError(`${where}: expected \`outputs\` to be an array of output names, got ${describe(outputs)}`);
  }
  // Check the host options now, so that a typo does not cost a model load first.
  const resolved = resolveOptions(where, customBatcher === undefined ? hostOptions : { ...hostOptions, batcher: customBatcher });
  const ort = loadOrt();
  const session = await loadSession(source, sessionOptions);
  try {
    const model = describeModel(session, { batchAxes });
    if (outputs !== undefined) {
      const missing = outputs.filter((o) => !session.outputNames.includes(o));
      if (missing.length > 0) {
        throw new TypeError(`${where}: \`outputs\` names ${missing.map((m) => `"${m}"`).join(', ')}, which the model does not have; its outputs are ${session.outputNames.map((n) => `"${n}"`).join(', ')}`);
      }
    }
    const name = hostOptions.name ?? (typeof source === 'string' ? basename(source) : 'onnx-model');
    const tensor = (type: string, data: TensorData, dims: readonly number[]): Tensor => new ort.Tensor(type as Tensor.Type, data as Tensor.DataType, dims);

    let batcher = customBatcher;
    if (batcher === undefined) {
      if (model.unbatchable !== undefined) {
        if (hostOptions.maxBatchSize !== 1) {
          const { input, dims, message } = model.unbatchable;
          throw new UnbatchableModelError(
            `${where}: the model cannot take batches: ${message}. Pass \`maxBatchSize: 1\` to run it unbatched (one request per model call), ` +
              'or name a symbolic batch axis in `batchAxes` if the model does accept batches.',
            input,
            dims,
          );
        }
        batcher = passThrough(name);
      } else {
        const wanted = outputs ?? session.outputNames;
        batcher = new DictBatcher<OnnxFeeds, OnnxResults>({
          inputs: Object.fromEntries(model.inputs.map((t) => [t.name, t.batchAxis])),
          outputs: Object.fromEntries(model.outputs.filter((t) => wanted.includes(t.name)).map((t) => [t.name, t.batchAxis])),
          tensor,
        });
      }
    }

    const fetches = outputs === undefined ? undefined : [...outputs];
    const executorFor = (s: InferenceSession, m: ModelDescription, file: ModelSource): Executor<OnnxFeeds, OnnxResults> & OnnxShown => ({
      run: async (feeds) => {
        // onnxruntime accepts only its own Tensor class; batchers and callers may hand plain { type, data, dims }.
        const wrapped: Record<string, Tensor> = {};
        for (const [key, t] of Object.entries(feeds)) wrapped[key] = t instanceof ort.Tensor ? t : tensor(t.type, t.data as TensorData, t.dims);
        return (fetches === undefined ? await s.run(wrapped) : await s.run(wrapped, fetches)) as OnnxResults;
      },
      stop: () => s.release(),
      session: s,
      model: m,
      ...(typeof file === 'string' ? { modelPath: file } : {}),
      // A reload's model file (or bytes) loads a new session, checked to fit the host built for this one.
      successor: async (next, reloadOptions: ModelReloadOptions) => {
        const at = `${name}.reload`;
        const file = paths === undefined ? next : paths(at, next);
        if (!isModelSource(file)) return toExecutor<OnnxFeeds, OnnxResults>(at, file, '');
        const nextSession = await loadSession(file, reloadOptions.session ?? sessionOptions);
        try {
          const nextModel = describeModel(nextSession, { batchAxes });
          const misfit = modelMisfit(m, nextModel);
          if (misfit !== undefined) throw new TypeError(`${at}: the new model does not fit the host made for the current one (${misfit}); make a new host for it`);
          return executorFor(nextSession, nextModel, file);
        } catch (e) {
          await nextSession.release().catch(() => undefined);
          throw e;
        }
      },
      reloadOptionKeys: ['session'],
    });
    const executor = executorFor(session, model, source);
    const generated = warmup === true ? { warmup: { samples: [zeroFeeds(model, tensor)], batchSizes: defaultWarmupSizes(resolved.maxBatchSize) } } : {};
    const final = deriveOptions(where, resolved, {}, { name, batcher, ...generated });
    return await started(placement === undefined ? new OnnxHost(executor, final) : new ServingHost(executor, final, placement));
  } catch (e) {
    await session.release().catch(() => undefined);
    throw e;
  }
}

/**
 * The batcher of an unbatchable model run with `maxBatchSize: 1`: the one request's feeds go to
 * the model as they are, and its outputs come back as they are.
 */
function passThrough(name: string): Batcher<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults, undefined> {
  return {
    merge(items) {
      if (items.length !== 1) {
        throw new RangeError(`${name}: this model cannot take batches, so maxBatchSize must stay 1; got a batch of ${items.length} requests`);
      }
      return { batch: items[0] as OnnxFeeds, ctx: undefined };
    },
    split: (output) => [output],
  };
}
