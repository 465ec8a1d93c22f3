// tsyringe refuses to load without the Reflect polyfill; importing it first is idempotent.
import 'reflect-metadata';
import { container as globalContainer, type DependencyContainer } from 'tsyringe';
import type { Batcher } from '../core/batcher';
import { describe } from '../core/describe';
import { deriveOptions, fail, HOST_OPTION_KEYS, optionKeys, rejectUnknownKeys, resolveOptions, type HostOptions, type ResolvedOptions } from '../core/options';
import type { Executor } from '../executors/executor';
import type { BatchMethodKey, BatchOf, BatchOutOf, DefaultBatchMethod, ItemOf, ResultOf } from './batch-method-types';
import { findBatchMethod, getBatchingMetadata, nameOf, type BatchingOptions } from './batching-metadata';
import { findGeneratingMethod } from './generating';
import { releaseContext, resolveInContext, type ContextProviders, type LoadedContext } from './context';
import { extname, join } from 'node:path';
import { findModuleExport, type ExportLocation } from '../executors/worker/find-export';
import type { WorkerExecutorOptions } from '../executors/worker/options';
import type { HostedClassData } from './hosted-class-worker';
import { classifyPlacement, hostOnExecutor } from './host-on-executor';
import { started } from '../engine/start-host';
import type { ReloadOptions } from '../executors/executor';
import { HostedModel, SuccessivePool, type HostReloadOptions } from './hosted-model';
import { hostOnWorkerModule, type ModuleHostOptions } from './create-worker-host';
import type { ModelHost } from '../engine/model-host';

export { HostedModel, type HostReloadOptions } from './hosted-model';

/**
 * Options of {@link createHost}: where the class is resolved, its context, which method to batch,
 * and host options that override the `@batching` ones (precedence: defaults < `@batching` options
 * < these < `host.configure()`). An `undefined` override keeps the decorator's value.
 *
 * @typeParam M - the batch method to host.
 * @typeParam Batch - what an executor object given as `executor` receives (the method's batch).
 * @typeParam BatchOut - what that executor returns (the method's result).
 *
 * @example
 * ```ts
 * const options: CreateHostOptions = {
 *   context: { [OnnxSession]: () => InferenceSession.create('model.onnx') },
 *   maxBatchSize: Number(process.env.MAX_BATCH ?? 32),
 * };
 * ```
 */
export interface CreateHostOptions<M extends PropertyKey = string | symbol, Batch = never, BatchOut = unknown> extends Partial<BatchingOptions> {
  /**
   * The container the host's own child container is created from. Nothing is ever registered in
   * it (nor in the global container).
   * @default tsyringe's global `container`
   */
  container?: DependencyContainer;
  /**
   * What the class is constructed with: `{ [token]: provider }` or `[token, provider]` pairs (see
   * {@link ContextProviders}). Async factories are awaited (once, in order) before the class is
   * resolved; what the host creates is released on `stop()`, in reverse order.
   * @default no context
   */
  context?: ContextProviders;
  /**
   * The `@batching` method to host.
   * @default `predictBatch`, or the class's only `@batching` method
   */
  method?: M;
  /**
   * Where batches run.
   *
   * - `'inline'`: on this thread, with the class resolved here from `container` and `context`.
   * - `'worker'` or an object of {@link HostedWorkerOptions}: in worker threads, each constructing
   *   its own instance of the class and its own context, so the model never blocks this thread's
   *   event loop. Workers find the class and the context by module path and export name: export
   *   both from their modules (the context as one object, e.g. `export const context = {...}`), or
   *   give their locations here. `maxConcurrentBatches` defaults to the number of workers.
   * - An executor object (anything with a `run` function, such as a `WorkerExecutor` you configured,
   *   or an adapter over a piscina pool whose worker file loads the model): bring your own pool. The
   *   class then supplies only the `@batching` options, the batch method's name and the types; it
   *   is **not** constructed on this thread, and every merged batch goes to `executor.run(batch)`.
   *   `context` and `container` are refused, since nothing here would use them: load the model
   *   where the pool runs. The host awaits `start()` (if any) before `createHost` resolves, and
   *   calls `stop()` (if any) after draining, unless `stopExecutor` is `false`.
   *   `maxConcurrentBatches` defaults to the executor's `concurrency` property, else a
   *   `WorkerExecutor`'s `workers`, else 1.
   *
   * An object with a `run` property is always taken as an executor, any other object as worker
   * options; anything else is a `TypeError` that says what was expected.
   *
   * @default 'inline'
   *
   * @example
   * ```ts
   * const pool = new WorkerExecutor<readonly Float32Array[], Float32Array[]>({ module: require.resolve('./scorer.worker'), workers: 2 });
   * const host = await createHost(Scorer, { executor: pool, maxDelayMs: 2 }); // maxConcurrentBatches: 2
   * await host.stop(); // drains, then stops the pool
   * ```
   */
  executor?: 'inline' | 'worker' | HostedWorkerOptions | (Executor<Batch, BatchOut> & { readonly concurrency?: number });
  /**
   * Whether `host.stop()` also stops an executor object given as `executor`. Pass `false` for a
   * pool shared by several hosts (its `start()` must then tolerate being called by each, as
   * `WorkerExecutor`'s does): stop it yourself once every host using it has stopped. Only allowed
   * with an executor object; the host owns the pools it creates for `'worker'`.
   * @default true
   */
  stopExecutor?: boolean;
}

/**
 * The worker pool of `createHost(C, { executor: {...} })`: the {@link WorkerExecutorOptions} that
 * make sense for a hosted class, plus where the workers load the class and the context from when
 * that cannot be found automatically (under jest, which has its own module registry).
 *
 * @example
 * ```ts
 * const executor: HostedWorkerOptions = { workers: 2, intraOpNumThreads: 1, classModule: require.resolve('./scorer') };
 * ```
 */
export interface HostedWorkerOptions
  extends Pick<WorkerExecutorOptions, 'workers' | 'intraOpNumThreads' | 'resourceLimits' | 'transferBatch' | 'startTimeoutMs' | 'stopTimeoutMs'> {
  /**
   * The module file that exports the class.
   * @default found among the loaded modules' exports
   */
  classModule?: string;
  /**
   * The class's export name in `classModule`.
   * @default the class's name, or the export found with it
   */
  classExport?: string;
  /**
   * The module file that exports the `context` object.
   * @default found among the loaded modules' exports
   */
  contextModule?: string;
  /**
   * The context's export name in `contextModule`.
   * @default the export found with it, else `'context'`
   */
  contextExport?: string;
}

const WORKER_KEYS = optionKeys<HostedWorkerOptions>({
  workers: true,
  intraOpNumThreads: true,
  resourceLimits: true,
  transferBatch: true,
  startTimeoutMs: true,
  stopTimeoutMs: true,
  classModule: true,
  classExport: true,
  contextModule: true,
  contextExport: true,
});

/** A class that constructs `T` (tsyringe resolves constructors of any arity). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- constructors of any arity
export type Constructor<T> = new (...args: any[]) => T;

const CREATE_HOST_KEYS = [
  ...optionKeys<Omit<CreateHostOptions, keyof HostOptions<unknown, unknown>>>({ container: true, context: true, method: true, executor: true, stopExecutor: true }),
  ...HOST_OPTION_KEYS,
];

/**
 * Builds a started {@link ModelHost} for a model class with an `@batching` method: creates a child
 * of the tsyringe container, creates the `context` in it (awaiting async providers), resolves the
 * class there, and batches calls of the chosen method. The host's types come from that method's
 * signature (`predictBatch(items: readonly In[]): Promise<Array<Out | Error>>` gives
 * `ModelHost<In, Out>`), or from `batcher` when one is given here.
 *
 * Resolves only once every provider is ready. Rejects with a {@link ContextProviderError} (naming
 * the token, with the provider's error as `cause`) when a provider fails, after releasing what was
 * already created. `host.stop()` drains, then releases the model instance and the context the host
 * created, last created first, through `Symbol.asyncDispose`, `Symbol.dispose`, `dispose()` or
 * `release()` (onnxruntime sessions); `useValue` values are the caller's and are left alone.
 *
 * Given an executor object as `executor` (bring your own pool), none of that happens on this
 * thread: the class gives the `@batching` options, the method and the types, and the executor,
 * which holds the model, runs every batch (see {@link CreateHostOptions.executor}).
 *
 * Given a worker module's path instead of a class (`createHost(require.resolve('./model.worker'),
 * { workers: 2, maxBatchSize: 32 })`), the module's factory `(ctx) => batchFn` builds the model in
 * each of `workers` worker threads (see {@link ModuleHostOptions}); `maxConcurrentBatches` follows
 * the worker count unless given. This replaces `createWorkerHost`.
 *
 * @param Class - the model class (usually `@injectable()`), or a worker module's path.
 * @param options - container, context, method, and host option overrides (for a module: the
 *   worker pool's options and the host's).
 *
 * @example
 * ```ts
 * const host = await createHost(Classifier, {
 *   context: { [OnnxSession]: () => InferenceSession.create('model.onnx') },
 *   maxBatchSize: 64, // beats the decorator's value
 * });
 * const label = await host.inference(row);
 * await host.stop(); // drains, then releases the session
 * ```
 */
export function createHost<T extends object, In, Out, Batch, BatchOut, M extends BatchMethodKey<T> = DefaultBatchMethod<T>>(
  Class: Constructor<T>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  options: CreateHostOptions<M, NoInfer<Batch>, NoInfer<BatchOut>> & { batcher: Batcher<In, Out, Batch, BatchOut, any> },
): Promise<HostedModel<In, Out, Batch, BatchOut>>;
export function createHost<T extends object, M extends BatchMethodKey<T> = DefaultBatchMethod<T>>(
  Class: Constructor<T>,
  options?: CreateHostOptions<M, NoInfer<BatchOf<T, M>>, NoInfer<BatchOutOf<T, M>>>,
): Promise<HostedModel<ItemOf<T, M>, ResultOf<T, M>, BatchOf<T, M>, BatchOutOf<T, M>>>;
export function createHost<In, Out, Batch, BatchOut, Data = unknown>(
  module: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  options: ModuleHostOptions<In, Out, Batch, BatchOut, Data> & { batcher: Batcher<In, Out, Batch, BatchOut, any> },
): Promise<ModelHost<In, Out, Batch, BatchOut>>;
export function createHost<In, Out, Data = unknown>(module: string, options: ModuleHostOptions<In, Out, readonly In[], ReadonlyArray<Out | Error>, Data>): Promise<ModelHost<In, Out>>;
export async function createHost(
  Class: Constructor<object> | string,
  options: CreateHostOptions<string | symbol, unknown, unknown> | ModuleHostOptions<unknown, unknown> = {},
): Promise<ModelHost<unknown, unknown, unknown, unknown>> {
  if (typeof Class === 'string') return hostOnModule(Class, options as ModuleHostOptions<unknown, unknown>);
  return hostOnClass(Class, options as CreateHostOptions<string | symbol, unknown, unknown>);
}

/** `createHost(module, options)`: the module's factory builds the model in each worker thread. */
function hostOnModule(module: string, options: ModuleHostOptions<unknown, unknown>): Promise<ModelHost<unknown, unknown, unknown, unknown>> {
  const where = `createHost(${JSON.stringify(module)})`;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object with at least maxBatchSize', options);
  const { executor = 'worker', ...rest } = options;
  if (executor !== 'worker') fail(where, 'executor', "'worker' (a worker module's factory builds the model in worker threads), or absent", executor);
  return hostOnWorkerModule({ ...rest, module });
}

/** `createHost(Class, options)`: a class with an `@batching` method, here or in worker threads. */
async function hostOnClass(Class: Constructor<object>, options: CreateHostOptions<string | symbol, unknown, unknown>): Promise<HostedModel<unknown, unknown, unknown, unknown>> {
  const where = `createHost(${typeof Class === 'function' ? nameOf(Class) : '?'})`;
  if (typeof Class !== 'function') throw new TypeError(`${where}: expected a class with an @batching method, got ${describe(Class)}`);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object', options);
  rejectUnknownKeys(where, options, CREATE_HOST_KEYS);
  const { container = globalContainer, context, method, executor = 'inline', stopExecutor, ...overrides } = options;
  const placement = classifyPlacement(where, executor);
  if (placement.kind === 'custom') {
    // Refused rather than ignored: a context given here would suggest the model is built on this thread.
    for (const key of ['context', 'container'] as const) {
      if (options[key] !== undefined) {
        throw new TypeError(
          `${where}: \`${key}\` cannot be used with an executor object: the executor runs every batch and holds the model, so ` +
            'nothing on this thread is built from it. Load the model where the executor runs (its worker module), or leave out `executor`',
        );
      }
    }
    if (stopExecutor !== undefined && typeof stopExecutor !== 'boolean') fail(where, 'stopExecutor', 'a boolean', stopExecutor);
  } else if (stopExecutor !== undefined) {
    throw new TypeError(`${where}: \`stopExecutor\` applies only to an executor object passed as \`executor\` (the host always stops the executors it creates)`);
  }
  if (typeof container !== 'object' || container === null || typeof container.createChildContainer !== 'function') {
    fail(where, 'container', 'a tsyringe DependencyContainer', container);
  }
  if (getBatchingMetadata(Class).length === 0 && findGeneratingMethod(Class) !== undefined) {
    throw new TypeError(`${where}: ${nameOf(Class)} has a @generating step method, not an @batching one; build its host with createGenerationHost(${nameOf(Class)}, { context })`);
  }
  const picked = findBatchMethod(Class, method, where);
  const hostOptions: Record<string, unknown> = { name: `${nameOf(Class)}.${String(picked.method)}`, ...picked.options };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) hostOptions[k] = v;
  // Checked once, here, before any provider runs: a typo must not cost a model load.
  const resolved = resolveOptions(where, hostOptions);
  const concurrencyGiven = hostOptions.maxConcurrentBatches !== undefined;
  if (placement.kind === 'custom') return hostOnExecutor(placement.executor, stopExecutor ?? true, resolved, concurrencyGiven, where);
  if (placement.kind === 'worker') return hostInWorkers(Class, context, picked.method, resolved, placement.options as HostedWorkerOptions, where);

  const first = inlineExecutor(Class, container, picked.method, where, context);
  // Built before the host, so that a provider's failure is createHost's (the host never existed).
  await first.start();
  return started(new HostedModel(first, resolved, where));
}

/**
 * The executor of an inline hosted class: `start()` creates the context in a child container and
 * resolves the class there; `stop()` releases both. Its successor (a reload) is a new one with the
 * reload's `context`, or the same providers run again.
 */
function inlineExecutor(Class: Constructor<object>, container: DependencyContainer, key: string | symbol, where: string, context: ContextProviders | undefined): Executor<unknown, unknown> & { start(): Promise<void> } {
  let loaded: LoadedContext | undefined;
  let instance: object | undefined;
  let started = false;
  return {
    async start(): Promise<void> {
      if (started) return;
      started = true;
      ({ loaded, instance } = await resolveInContext(container, Class, context, where));
    },
    // Looked up per batch, so the method stays the instance's own (spies and overrides included).
    run: (batch: unknown): unknown => (instance as Record<string | symbol, (b: unknown) => unknown>)[key]!(batch),
    stop: async (): Promise<void> => {
      if (loaded !== undefined) await releaseContext(loaded, where, [instance]);
    },
    successor: (_next, options) => inlineExecutor(Class, container, key, where, (options as HostReloadOptions).context ?? context),
    reloadOptionKeys: ['context'],
  };
}

/** `createHost` with `executor: 'worker'`: the class and its context are built in each worker. */
async function hostInWorkers(
  Class: Constructor<object>,
  context: ContextProviders | undefined,
  method: string | symbol,
  hostOptions: ResolvedOptions,
  o: HostedWorkerOptions,
  where: string,
): Promise<HostedModel<unknown, unknown, unknown, unknown>> {
  rejectUnknownKeys(`${where}: executor`, o, WORKER_KEYS);
  if (typeof method === 'symbol') {
    throw new TypeError(`${where}: a symbol-named batch method (${String(method)}) cannot be named to a worker thread; use a string-named method with executor 'worker'`);
  }
  const located = (value: unknown, module: string | undefined, exportName: string | undefined, what: string, hint: string): ExportLocation => {
    if (module !== undefined) return { module, exportName: exportName ?? fallbackExport(value) };
    const found = findModuleExport(value);
    if (found === undefined) {
      throw new TypeError(
        `${where}: with executor 'worker', each worker loads the ${what} by module path and export name, but it is not among ` +
          `the exports of any loaded module. ${hint}`,
      );
    }
    return exportName === undefined ? found : { module: found.module, exportName };
  };
  const cls = located(Class, o.classModule, o.classExport, `class ${nameOf(Class)}`, 'Export it from its module, or pass executor: { classModule, classExport }.');
  const ctx =
    context === undefined
      ? undefined
      : located(
          context,
          o.contextModule,
          o.contextExport,
          'context',
          'Context providers are functions and cannot be sent to a thread: export the context object from a module ' +
            '(export const context = { ... }) and pass that object, or pass executor: { contextModule, contextExport }.',
        );
  const data: HostedClassData = {
    classModule: cls.module,
    classExport: cls.exportName,
    contextModule: ctx?.module,
    contextExport: ctx?.exportName,
    method,
    where,
  };
  const isTs = (file: string | undefined): boolean => file !== undefined && /\.[cm]?tsx?$/.test(file);
  // A reload starts new workers, which construct the class and run the context's providers afresh.
  const successor = (_next: unknown, options: ReloadOptions): Executor<unknown, unknown> => {
    if ((options as HostReloadOptions).context !== undefined) {
      throw new TypeError(`${where}.reload: a new \`context\` cannot be sent to worker threads; change what the exported context's providers load, then reload() without one`);
    }
    return poolOf();
  };
  const poolOf = (): SuccessivePool<unknown, unknown> => new SuccessivePool({
    module: join(__dirname, `hosted-class-worker${extname(__filename)}`),
    workerData: data,
    workers: o.workers,
    intraOpNumThreads: o.intraOpNumThreads,
    resourceLimits: o.resourceLimits,
    transferBatch: o.transferBatch,
    startTimeoutMs: o.startTimeoutMs,
    stopTimeoutMs: o.stopTimeoutMs,
    // The pool can replace a hung worker; the host alone could only abandon it.
    batchTimeoutMs: hostOptions.batchTimeoutMs === Infinity ? undefined : hostOptions.batchTimeoutMs,
    loadsTypeScript: isTs(cls.module) || isTs(ctx?.module),
    name: hostOptions.name,
  }, successor, ['context']);
  const pool = poolOf();
  // The pool keeps its own batch time limit (above); the host's would only abandon a hung worker.
  const moved = deriveOptions(where, hostOptions, { maxConcurrentBatches: pool.workers }, { batchTimeoutMs: Infinity });
  return started(new HostedModel(pool, moved, where));
}

function fallbackExport(value: unknown): string {
  return typeof value === 'function' && value.name !== '' ? value.name : 'context';
}
