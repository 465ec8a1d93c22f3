import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { ResolvedOptions } from '../core/options';
import type { Executor, ReloadOptions } from '../executors/executor';
import { ModelHost } from '../engine/model-host';
import type { ModelDescription } from './describe-model';
import type { LoadSessionOptions } from './load-session';

/** One request to an ONNX host: the feeds of one item, by input name (what `session.run` takes). */
export type OnnxFeeds = Record<string, Tensor>;
/** One result of an ONNX host: that item's outputs, by output name. */
export type OnnxResults = Record<string, Tensor>;

/**
 * What an ONNX host's executor shows of its model: the host's getters read it from the executor
 * serving now, so a reload (which swaps the executor) changes them when it completes.
 * @internal
 */
export interface OnnxShown {
  readonly model: ModelDescription;
  /** The session, for a model run on this thread. */
  readonly session?: InferenceSession;
  /** The model file, when the model came from one. */
  readonly modelPath?: string;
}

/**
 * Options of an ONNX host's `reload(file, options)`: the version label, and for a host on this
 * thread the new session's options.
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

/**
 * A host made by {@link createOnnxHost}: a started `ModelHost` that also shows its model.
 * `host.reload(file, { version, session })` loads a new version of the model (a file path or its
 * bytes) and swaps it in without stopping (see `ModelHost.reload`): it must have the same inputs
 * and outputs (names, element types and batch axes) as the current one, or the reload is refused
 * with a `TypeError` and the current model keeps serving.
 *
 * @example
 * ```ts
 * const host: OnnxHost = await createOnnxHost('classifier.onnx', { maxBatchSize: 32 });
 * await host.reload('models/classifier-v2.onnx', { version: '2' });
 * console.log(host.version, host.model.inputs);
 * ```
 */
export class OnnxHost extends ModelHost<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults> {
  #last: OnnxShown;

  /** @internal */
  constructor(executor: Executor<OnnxFeeds, OnnxResults> & OnnxShown, options: ResolvedOptions) {
    super(executor, options as never);
    this.#last = executor;
  }

  /** What the executor serving now shows; after a reload with a batch function, the last ONNX model's. */
  #shown(): OnnxShown {
    const current = this.servingExecutor as Partial<OnnxShown>;
    if (current.model !== undefined) this.#last = current as OnnxShown;
    return this.#last;
  }

  /**
   * The session it runs now (after a reload, the new one); it belongs to the host, and `stop()`
   * releases it. A host whose model runs in worker threads has none here: reading it throws.
   */
  get session(): InferenceSession {
    const { session } = this.#shown();
    if (session === undefined) throw new TypeError(`${this.name}: the model runs in worker threads, each with its own session; there is none on this thread`);
    return session;
  }

  /** The model's inputs and outputs with the batch axes in use. */
  get model(): ModelDescription {
    return this.#shown().model;
  }

  /**
   * The model file serving now (after a reload, the new one).
   * @default undefined for a model loaded from bytes
   */
  get modelPath(): string | undefined {
    return this.#shown().modelPath;
  }
}

/**
 * Where an ONNX host built with `workers` (or by `createServingHost`) runs its model, as it was made.
 * @internal
 */
export interface ServingPlacement {
  readonly executor: 'worker' | 'inline';
  readonly workers: number;
  readonly threads: number;
  readonly machine: 'shared' | 'dedicated';
}

/**
 * A host made by {@link createOnnxHost} with `workers` (or by the deprecated `createServingHost`):
 * an {@link OnnxHost} that also says where its model runs. `reload(modelPath, { version })` takes
 * a model file path (workers load models by path): new workers (or a new session) start and warm
 * up beside the serving ones, later batches run on them, and the old ones stop once their batches
 * have delivered.
 *
 * @example
 * ```ts
 * const host: ServingHost = await createOnnxHost('model.onnx', { maxBatchSize: 32, workers: 1 });
 * console.log(host.executor, host.workers, host.threads, host.modelPath);
 * ```
 */
export class ServingHost extends OnnxHost {
  /** Where the model runs: `'worker'` threads or `'inline'` (the calling thread). */
  readonly executor: 'worker' | 'inline';
  /** Worker threads (0 when inline). */
  readonly workers: number;
  /** onnxruntime intra-op threads per session. */
  readonly threads: number;
  /** The machine preset it was made with. */
  readonly machine: 'shared' | 'dedicated';

  /** @internal */
  constructor(executor: Executor<OnnxFeeds, OnnxResults> & OnnxShown, options: ResolvedOptions, placement: ServingPlacement) {
    super(executor, options);
    ({ executor: this.executor, workers: this.workers, threads: this.threads, machine: this.machine } = placement);
  }

  /** The model file serving now (after a reload, the new one). */
  override get modelPath(): string {
    return super.modelPath as string;
  }
}
