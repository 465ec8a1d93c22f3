import { describe } from '../core/describe';
import type { TransportEvent } from '../core/observer';
import { invalidArgument, shuttingDown } from './errors';
import { RequestGate, resolveLimits, type ResolvedLimits, type ServerLimits } from './limits';
import { ServerLogger, type LogOption } from './logger';
import { StatsCollector } from './model-stats';
import { ServingRegistry, type Served } from './registry';
import { type GenerativeServable, type GeneratorEntry, type InferenceServable, type Tokenizer } from './servables';

/** Options of {@link createServingCore}. */
export interface ServingCoreOptions {
  /**
   * The batching models to serve, by the name clients use (`/v2/models/{name}` over HTTP, the
   * `model_name` of a gRPC call). A promise is allowed: it loads in the background, and the name
   * answers `unavailable` (`model_loading`) until it resolves.
   * @default none (then `generators` must name one)
   * @example `{ classifier: await createOnnxHost('cls.onnx', { maxBatchSize: 32 }) }`
   */
  models?: Readonly<Record<string, InferenceServable | PromiseLike<InferenceServable>>>;
  /**
   * Generative models, by name: a `GenerationHost`, or `{ host, tokenizer }`, or a promise of either.
   * Names must differ from those in `models`.
   * @default none
   */
  generators?: Readonly<Record<string, GenerativeServable | GeneratorEntry | PromiseLike<GenerativeServable | GeneratorEntry>>>;
  /**
   * Size and time limits, shared by every transport that serves this core (one
   * `maxConcurrentRequests` bound for all of them).
   * @default DEFAULT_LIMITS
   */
  limits?: ServerLimits;
  /**
   * Logging (levels, text or JSON lines, repeated refusals summarised), shared by every transport.
   * Nothing is logged without it.
   * @default undefined
   */
  log?: LogOption;
  /**
   * Stop the hosts when the core closes (draining them when `close({ drain: true })`).
   * @default true
   */
  stopModelsOnClose?: boolean;
  /**
   * Allow a core that starts with no model, because something fills its registry later: a model
   * repository (`microbatch/repository`), which in explicit mode loads nothing until asked.
   * @default false (a core without models is refused, as a mistake)
   */
  filledLater?: boolean;
}

/** Options of {@link ServingCore.close}. */
export interface CoreCloseOptions {
  /**
   * `true`: answer every call already admitted, then stop the hosts draining their queues.
   * `false`: stop the hosts at once (queued requests are refused as stopped).
   * @default true
   */
  drain?: boolean;
  /**
   * The longest a draining close waits for calls in flight before stopping the hosts anyway.
   * @default 30000
   */
  timeoutMs?: number;
}

/**
 * What every transport of the Open Inference Protocol serves: one registry of models and
 * generators, one set of limits, one admission gate, one statistics collector and one logger.
 * The HTTP server (`microbatch/http`) and the gRPC server (`microbatch/grpc`) each take a core —
 * their own, made from `models`, or one they share, so that concurrent calls of both land in the
 * same batches and closing the core drains both. Transports look models up only through
 * {@link ServingCore.model}, {@link ServingCore.generator} and {@link ServingCore.modelReady}, so
 * that what a name and version resolve to is decided in one place.
 *
 * @example
 * ```ts
 * import { createOnnxHost } from 'microbatch/onnx';
 * import { createInferenceServer, createServingCore, handleShutdownSignals } from 'microbatch/http';
 *
 * const core = createServingCore({ models: { classifier: await createOnnxHost('cls.onnx') } });
 * const http = createInferenceServer({ core });
 * await http.listen(8080);
 * handleShutdownSignals([http, core]); // the servers stop accepting, the core drains and stops the models
 * ```
 */
export class ServingCore {
  /** The served names and their state. @internal */
  readonly registry: ServingRegistry;
  /** The limits in force, defaults filled in. */
  readonly limits: ResolvedLimits;
  /** The shared log. @internal */
  readonly logger: ServerLogger;
  /** Triton's statistics of every served model, from the hosts' events. @internal */
  readonly stats: StatsCollector;
  readonly #gate: RequestGate;
  readonly #stopModels: boolean;
  #closing = false;
  #closed: Promise<void> | undefined;
  #idleWaiters: Array<() => void> = [];

  /** @param where - what error messages start with (the function that was handed the options). */
  constructor(options: ServingCoreOptions, where = 'createServingCore') {
    if (typeof options !== 'object' || options === null) throw new TypeError(`${where}: expected options { models, generators?, limits?, log? }, got ${describe(options)}`);
    this.limits = resolveLimits(where, options.limits);
    this.logger = new ServerLogger(options.log, where);
    const models = options.models ?? {};
    const given = options.generators ?? {};
    if (typeof given !== 'object' || given === null) throw new TypeError(`${where}: expected \`generators\` to be an object { name: generationHost }, got ${describe(given)}`);
    if (typeof models !== 'object' || models === null || (Object.keys(models).length + Object.keys(given).length === 0 && options.filledLater !== true)) {
      throw new TypeError(`${where}: expected \`models\` to be an object { name: host } with at least one model (or \`generators\` with one)`);
    }
    for (const name of Object.keys(given)) {
      if (Object.prototype.hasOwnProperty.call(models, name)) throw new TypeError(`${where}: ${JSON.stringify(name)} is both in \`models\` and in \`generators\`; a name serves one model`);
    }
    // Batching models first, then generators (the order a listing shows them in).
    this.registry = new ServingRegistry(where, (name, e) => this.logger.line('error', `microbatch: model "${name}" failed to load: ${e.message}`));
    for (const [name, value] of Object.entries(models)) this.registry.add(name, value, 'model');
    for (const [name, value] of Object.entries(given)) this.registry.add(name, value, 'generator');
    this.#gate = new RequestGate(this.limits.maxConcurrentRequests);
    this.#stopModels = options.stopModelsOnClose ?? true;
    this.stats = new StatsCollector();
  }

  /** True once {@link close} was called: every transport refuses new calls. */
  get closing(): boolean {
    return this.#closing;
  }

  /** True once every served name is loaded and ready, and the core is not closing (a server's readiness). */
  get ready(): boolean {
    return !this.#closing && this.registry.allReady();
  }

  /**
   * The batching model `name` serves at `version` (any served version when `undefined`), or the
   * error to answer with: `'not-found'` for an unknown name or version, `'unavailable'` while it
   * loads or when it failed, `'invalid-argument'` for a generator's name.
   */
  model(name: string, version: string | undefined): InferenceServable {
    // The registry resolves the version: the one asked for, else the highest serving.
    const served = this.registry.get(name, version);
    if (served.kind !== 'model') {
      throw invalidArgument('not_a_batching_model', `model ${JSON.stringify(name)} is a generative model: send its requests to its generate route (POST /v2/models/${name}/generate or /generate_stream; gRPC ModelStreamInfer)`);
    }
    return served.host;
  }

  /** The generator `name` serves at `version`, with its tokenizer, or the error to answer with (as {@link model}, mirrored). */
  generator(name: string, version: string | undefined): { readonly host: GenerativeServable; readonly tokenizer?: Tokenizer } {
    const kind = this.registry.kindOf(name);
    if (kind === 'model') {
      throw invalidArgument('not_a_generator', `model ${JSON.stringify(name)} is not a generative model; send its requests to POST /v2/models/${name}/infer`);
    }
    return this.registry.get(name, version) as Extract<Served, { kind: 'generator' }>;
  }

  /** Whether `name` (at `version`) can take requests now; throws `'not-found'` for an unknown name or version. */
  modelReady(name: string, version: string | undefined): boolean {
    return this.registry.isReady(name, version) && !this.#closing;
  }

  /**
   * Admits one call of any transport, or throws `'unavailable'`: `shutting_down` while the core
   * closes, `queue_full` when `limits.maxConcurrentRequests` calls are already in flight (a
   * refusal `hostName`'s metrics count). Every admitted call must end with {@link leave}.
   * `transport` names where the call came from, for `CHANNELS.transport` (metrics by transport).
   */
  enter(hostName?: string, transport?: TransportEvent['transport']): void {
    if (this.#closing) throw shuttingDown();
    this.#gate.enter(hostName, transport);
  }

  /** Ends a call {@link enter} admitted. */
  leave(): void {
    this.#gate.leave();
    if (this.#gate.held === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * Stops admitting calls at once (every transport answers `unavailable` `shutting_down`), waits
   * for the calls in flight (draining) or not, stops the hosts unless `stopModelsOnClose` is false,
   * and flushes the log. Idempotent: a second call returns the first call's promise.
   */
  close(options: CoreCloseOptions = {}): Promise<void> {
    this.#closed ??= this.#close(options.drain ?? true, options.timeoutMs ?? 30_000);
    return this.#closed;
  }

  async #close(drain: boolean, timeoutMs: number): Promise<void> {
    this.#closing = true;
    const hosts = (await this.registry.settled()).map((s) => s.host);
    if (drain) await this.#whenIdle(timeoutMs);
    if (this.#stopModels) {
      // Without drain, queued requests reject with HostStoppedError and are answered unavailable now.
      await Promise.all(hosts.map((h) => h.stop({ drain }).catch((e: unknown) => this.logger.line('error', `microbatch: stopping a model failed: ${String(e)}`))));
    }
    this.logger.close(); // the refusals counted so far are not lost with the process
    this.stats.close();
  }

  #whenIdle(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#gate.held === 0) return resolve();
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      this.#idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/**
 * The serving core of one or more transports: see {@link ServingCore}. Throws a TypeError for
 * options of the wrong shape (no models, a name served twice, a malformed host).
 *
 * @example
 * ```ts
 * import { createServingCore } from 'microbatch/http';
 * import { createOnnxHost } from 'microbatch/onnx';
 *
 * const core = createServingCore({ models: { classifier: createOnnxHost('cls.onnx') }, limits: { timeoutMs: 2000 } });
 * ```
 */
export function createServingCore(options: ServingCoreOptions): ServingCore {
  return new ServingCore(options);
}
