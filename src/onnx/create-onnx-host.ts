import { basename } from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { ModelHost } from '../engine/model-host';
import { checkReloadOptions, type ReloadOptions } from '../engine/executor-swap';
import { startHost } from '../engine/start-host';
import { DictBatcher } from '../batchers/dict-batcher';
import type { Batcher } from '../core/batcher';
import { describe } from '../core/describe';
import { defaultWarmupSizes, HOST_OPTION_KEYS, optionKeys, refineOptions, resolveOptions, type HostOptions, type WarmupOptions } from '../core/options';
import type { Executor } from '../executors/executor';
import { DTYPES, type TensorData, type TensorType } from '../tensor/dtypes';
import { describeModel, type BatchAxis, type ModelDescription } from './describe-model';
import { UnbatchableModelError } from './errors';
import { loadSession, type LoadSessionOptions, type ModelSource } from './load-session';
import { loadOrt } from './runtime';

/** One request to an ONNX host: the feeds of one item, by input name (what `session.run` takes). */
export type OnnxFeeds = Record<string, Tensor>;
/** One result of an ONNX host: that item's outputs, by output name. */
export type OnnxResults = Record<string, Tensor>;

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
}

/** A host made by {@link createOnnxHost}: a started `ModelHost` that also shows its model. */
export type OnnxHost = ModelHost<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults> & {
  /** The session it runs now (after a reload, the new one); it belongs to the host, and `stop()` releases it. */
  readonly session: InferenceSession;
  /** The model's inputs and outputs with the batch axes in use. */
  readonly model: ModelDescription;
  /**
   * Loads a new version of the model (a file path or its bytes) and swaps it in without stopping
   * (see `ModelHost.reload`): it must have the same inputs and outputs (names, element types and
   * batch axes) as the current one, or the reload is refused with a `TypeError` and the current
   * model keeps serving. `options.session` defaults to the host's session options;
   * `options.version` labels the new model (see `ModelHost.version`).
   *
   * @example
   * ```ts
   * await host.reload('models/classifier-v2.onnx', { version: '2' });
   * ```
   */
  reload(source: ModelSource, options?: ModelReloadOptions): Promise<void>;
};

/**
 * Options of an ONNX host's `reload(file)`: the version label, and for a host on this thread the
 * new session's options.
 *
 * @example
 * ```ts
 * const options: ModelReloadOptions = { version: 'v2', session: { intraOpNumThreads: 1 } };
 * ```
 */
export interface ModelReloadOptions extends ReloadOptions {
  /**
   * The new session's options (a host on this thread only).
   * @default the options the host's first session was loaded with
   */
  session?: LoadSessionOptions;
}

const OWN_KEYS = optionKeys<Omit<OnnxHostOptions, keyof HostOptions<OnnxFeeds, OnnxResults>>>({ session: true, batchAxes: true, outputs: true });

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
export async function createOnnxHost(source: ModelSource, options: OnnxHostOptions): Promise<OnnxHost> {
  const where = 'createOnnxHost';
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${where}: expected options to be an object with at least \`maxBatchSize\`, got ${describe(options)}`);
  }
  const known = [...HOST_OPTION_KEYS, ...OWN_KEYS];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`${where}: unknown option \`${key}\`; the known options are ${known.map((k) => `\`${k}\``).join(', ')}`);
  }
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
    const executorFor = (s: InferenceSession): Executor<OnnxFeeds, OnnxResults> => ({
      run: async (feeds) => {
        // onnxruntime accepts only its own Tensor class; batchers and callers may hand plain { type, data, dims }.
        const wrapped: Record<string, Tensor> = {};
        for (const [key, t] of Object.entries(feeds)) wrapped[key] = t instanceof ort.Tensor ? t : tensor(t.type, t.data as TensorData, t.dims);
        return (fetches === undefined ? await s.run(wrapped) : await s.run(wrapped, fetches)) as OnnxResults;
      },
      stop: () => s.release(),
    });
    const executor = executorFor(session);
    const generated = warmup === true ? { warmup: { samples: [zeroFeeds(model, tensor)], batchSizes: defaultWarmupSizes(resolved.maxBatchSize) } } : {};
    const host = await startHost<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults>(executor, refineOptions(resolved, { name, batcher, ...generated }));
    let current = { session, model };
    const reloadExecutor = host.reload.bind(host);
    // A model file (or bytes) loads a new session and swaps it in through ModelHost.reload; a
    // batch function or executor goes to ModelHost.reload as it is.
    const reload = async (next: unknown, reloadOptions: ModelReloadOptions = {}): Promise<void> => {
      if (!isModelSource(next)) return reloadExecutor(next as Executor<OnnxFeeds, OnnxResults>, reloadOptions);
      checkReloadOptions(`${name}.reload`, reloadOptions, ['session']);
      const { session: nextSessionOptions, ...swapOptions } = reloadOptions;
      const nextSession = await loadSession(next, nextSessionOptions ?? sessionOptions);
      let nextModel: ModelDescription;
      try {
        nextModel = describeModel(nextSession, { batchAxes });
        const misfit = modelMisfit(current.model, nextModel);
        if (misfit !== undefined) throw new TypeError(`${name}.reload: the new model does not fit the host made for the current one (${misfit}); make a new host for it`);
      } catch (e) {
        await nextSession.release().catch(() => undefined);
        throw e;
      }
      await reloadExecutor(executorFor(nextSession), swapOptions);
      current = { session: nextSession, model: nextModel };
    };
    Object.defineProperties(host, {
      session: { get: () => current.session, enumerable: true },
      model: { get: () => current.model, enumerable: true },
      // Configurable, so that a serving host can narrow it to model paths.
      reload: { value: reload, enumerable: false, configurable: true },
    });
    return host as OnnxHost;
  } catch (e) {
    await session.release().catch(() => undefined);
    throw e;
  }
}

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
