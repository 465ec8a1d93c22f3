import { describe } from '../core/describe';
/**
 * Where the batch function runs. A plain function passed to `ModelHost` runs inline, on the
 * calling thread; an executor object can also prepare itself (`start`) and release what it holds
 * (`stop`), for example a pool of worker threads that host the model.
 *
 * @example
 * ```ts
 * const executor: Executor<readonly number[], number[]> = {
 *   start: async () => { model = await load(); },
 *   run: (xs) => model.predict(xs),
 *   stop: async () => model.dispose(),
 * };
 * const host = new ModelHost(executor, { maxBatchSize: 16 });
 * ```
 */
export interface Executor<Batch, BatchOut> {
  /** Prepares the executor; the host awaits it (once) before the first batch. */
  start?(): Promise<void>;
  /** Runs one batch. */
  run(batch: Batch): BatchOut | PromiseLike<BatchOut>;
  /** Releases everything; the host calls it once, after the last batch has finished. */
  stop?(): Promise<void>;
  /**
   * Builds the executor that takes over on `host.reload(next, options)` when `next` is not itself
   * a batch function or an executor: a model file for an ONNX executor, `undefined` for "load the
   * same model again" (a hosted class re-runs its context's providers). The host starts the
   * successor (and warms it up) beside this one and swaps it in once ready; the hook only builds
   * it. Without the hook, `reload()` takes only batch functions and executors.
   */
  successor?(next: unknown, options: ReloadOptions): Executor<Batch, BatchOut> | Promise<Executor<Batch, BatchOut>>;
  /**
   * The option keys `successor` reads beyond `version` (e.g. `['session']`); `reload()` refuses
   * others, naming these.
   * @default []
   */
  readonly reloadOptionKeys?: readonly string[];
  /**
   * How many batches beyond the ones it runs at once this executor holds, in order, and starts the
   * moment a running one ends (a worker pool queues them). A host under the window policy then
   * hands it the next batch while one runs, once that batch is full and could not grow by waiting,
   * so the model does not wait for the host between batches. An executor that would run such a
   * batch at once instead (a plain function) must leave it out.
   * @default 0
   */
  readonly batchesAhead?: number;
}

/**
 * Options of `host.reload(next, options)`: the version label, plus whatever the serving
 * executor's `successor` hook reads (named by its `reloadOptionKeys`; a hosted class takes
 * `context`, an ONNX host on this thread `session`).
 *
 * @example
 * ```ts
 * const options: ReloadOptions = { version: '2' };
 * ```
 */
export interface ReloadOptions {
  /**
   * The new model's version label: what `host.version` and the HTTP server's model metadata say
   * once the reload completes. Non-empty, without `/` (it appears in `/versions/{v}` paths).
   * @default the count of models the host has served, including the new one (`'2'`, `'3'`...)
   */
  version?: string;
  /**
   * A hosted class's new context providers (`createHost`): a fresh instance is built with them.
   * @default the host's own providers, run again
   */
  context?: object;
  /**
   * Session options for the new model of an ONNX host on this thread (`createOnnxHost`).
   * @default the host's own
   */
  session?: object;
}

/**
 * What `host.reload(next)` takes: a batch function or an executor to run from now on, or what the
 * serving executor's `successor` hook builds one from (a model file's path or bytes for an ONNX
 * host; nothing, to load the same model again).
 */
export type ReloadTarget<Batch, BatchOut> = BatchFunction<Batch, BatchOut> | Executor<Batch, BatchOut> | string | Uint8Array;

/** A batch function: the simplest executor. */
export type BatchFunction<Batch, BatchOut> = (batch: Batch) => BatchOut | PromiseLike<BatchOut>;

/** A batch function or an executor, as an executor; a TypeError naming what came otherwise. @internal */
export function toExecutor<Batch, BatchOut>(where: string, value: unknown, position: string): Executor<Batch, BatchOut> {
  if (typeof value === 'function') return { run: value as BatchFunction<Batch, BatchOut> };
  if (typeof value === 'object' && value !== null && typeof (value as Executor<Batch, BatchOut>).run === 'function') return value as Executor<Batch, BatchOut>;
  throw new TypeError(`${where}: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch)${position === '' ? '' : `, ${position}`}, got ${describe(value)}`);
}
