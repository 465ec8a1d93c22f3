import { fail } from '../core/options';
import type { Executor, ReloadOptions, ReloadTarget } from '../executors/executor';
import type { WorkerExecutorOptions } from '../executors/worker/options';
import { WorkerExecutor } from '../executors/worker/worker-executor';
import { checkReloadOptions } from '../engine/executor-swap';
import { ModelHost } from '../engine/model-host';
import type { ResolvedOptions } from '../core/options';
import type { ContextProviders } from './context';

/**
 * Options of a hosted class's `host.reload(undefined, options)`: a new instance of the class, built
 * beside the serving one, takes over once it is ready (see `ModelHost.reload`).
 *
 * @example
 * ```ts
 * await host.reload(undefined, { context: { [OnnxSession]: () => InferenceSession.create('model-v2.onnx') }, version: '2' });
 * ```
 */
export interface HostReloadOptions extends ReloadOptions {
  /**
   * The new instance's context (inline hosts only: worker threads load the exported context, so
   * change what its providers load and reload without one).
   * @default the context the host was created with, its providers run again (a model file is read again)
   */
  context?: ContextProviders;
}

/** Builds the executor that takes over on a reload (see `Executor.successor`). @internal */
export type Successor<Batch, BatchOut> = (next: unknown, options: ReloadOptions) => Executor<Batch, BatchOut> | Promise<Executor<Batch, BatchOut>>;

/**
 * A host made by {@link createHost}: a `ModelHost` whose `reload()` without a batch function or
 * executor builds a new instance of the class (with `options.context`, or the same providers run
 * again; in new workers for a worker host) beside the serving one and swaps it in without stopping;
 * a failure to build it rejects and leaves the current instance serving. The serving executor's
 * `successor` hook builds it; this class adds only the older call form `reload({ context, version })`.
 *
 * @example
 * ```ts
 * const host: HostedModel<string, number> = await createHost(Sentiment);
 * await host.reload(); // re-run the context's providers: the model file is read again
 * ```
 */
export class HostedModel<In, Out, Batch = readonly In[], BatchOut = ReadonlyArray<Out | Error>> extends ModelHost<In, Out, Batch, BatchOut> {
  readonly #where: string;

  /** @internal */
  constructor(executor: Executor<Batch, BatchOut>, options: ResolvedOptions, where: string) {
    super(executor, options as never);
    this.#where = where;
  }

  /**
   * Replaces the model without stopping (see `ModelHost.reload`): with no batch function or
   * executor, a new instance of the class (with `options.context`, else the same providers run
   * again). `reload({ context, version })`, the options as the first argument, still works.
   *
   * @example
   * ```ts
   * await host.reload(undefined, { version: '2' });
   * ```
   */
  override reload(
    next?: ReloadTarget<Batch, BatchOut> | ReloadTarget<readonly In[], ReadonlyArray<Out | Error>> | ReloadOptions,
    options?: ReloadOptions,
  ): Promise<void> {
    const where = `${this.#where}.reload`;
    if (typeof next === 'function' || (typeof next === 'object' && next !== null && 'run' in next)) return super.reload(next, options);
    try {
      if (next === undefined) return super.reload(undefined, options);
      if (typeof next !== 'object' || next === null || Array.isArray(next) || ArrayBuffer.isView(next)) {
        fail(where, 'options', 'an object { context?, version? }, a batch function, or an executor object with run(batch)', next);
      }
      // The older form, reload({ context, version }): the options came first.
      checkReloadOptions(where, next, ['context']);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return super.reload(undefined, next);
  }
}

/**
 * A worker pool that knows how to make its successor (a fresh pool made the same way, or for a new
 * model file): the worker executor of the factories whose `reload()` starts new workers.
 * @internal
 */
export class SuccessivePool<Batch, BatchOut> extends WorkerExecutor<Batch, BatchOut> {
  readonly #next: Successor<Batch, BatchOut>;

  constructor(
    options: WorkerExecutorOptions,
    next: Successor<Batch, BatchOut>,
    readonly reloadOptionKeys: readonly string[] = [],
  ) {
    super(options);
    this.#next = next;
  }

  successor(next: unknown, options: ReloadOptions): Executor<Batch, BatchOut> | Promise<Executor<Batch, BatchOut>> {
    return this.#next(next, options);
  }
}
