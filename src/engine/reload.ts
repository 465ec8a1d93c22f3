import { toExecutor, type Executor } from '../executors/executor';
import { checkReloadOptions, ExecutorSwap, type ReloadOptions } from './executor-swap';
import { hostStopped, reloadFailed, stoppedDuringReload } from './settle-errors';

const resolved = Promise.resolve();

/** What a reload needs from its host. @internal */
export interface ReloadHost {
  readonly name: string;
  /** Whether the host is stopping (a reload is refused, or its new model discarded). */
  stopping(): boolean;
  /** The host's own start (a reload waits for the first model to be up). */
  start(): Promise<void>;
  /** Starts and warms up a new executor (see `prepareExecutor`). */
  prepare(executor: Executor<unknown, unknown>): Promise<void>;
  /** The new executor serves from now on: release what waits. */
  swapped(): void;
}

/**
 * A host's model source over time: the executor serving now (an {@link ExecutorSwap}), its
 * version, and `reload()`, which builds, starts and warms up the next one beside it and swaps to
 * it. `next` is a batch function or an executor (used as it is), or anything else the serving
 * executor's `successor(next, options)` knows how to build from (a module path, a model file, a
 * context): the one reload signature of every host. Reloads run one at a time, in call order.
 * @internal
 */
export class Reloader<Batch, BatchOut> {
  readonly executors: ExecutorSwap<Batch, BatchOut>;
  /** The version serving now. */
  version = '1';
  #reloads = 0;
  #chain: Promise<void> = resolved;

  constructor(
    first: Executor<Batch, BatchOut>,
    private readonly host: ReloadHost,
  ) {
    this.executors = new ExecutorSwap(first);
  }

  /** Replaces the model without stopping (see `ModelHost.reload`). */
  reload(next: unknown, options: ReloadOptions = {}): Promise<void> {
    const host = this.host;
    const where = `${host.name}.reload`;
    if (host.stopping()) return Promise.reject(hostStopped(where));
    const direct = typeof next === 'function' || (typeof next === 'object' && next !== null && typeof (next as Executor<Batch, BatchOut>).run === 'function');
    // A batch function or executor given as it is, made now (its errors are the call's).
    let given: Executor<Batch, BatchOut> | undefined;
    try {
      checkReloadOptions(where, options, direct ? [] : (this.executors.current.reloadOptionKeys ?? []));
      if (direct || this.executors.current.successor === undefined) given = toExecutor<Batch, BatchOut>(where, next, '');
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const run = async (): Promise<void> => {
      await host.start();
      // Built when its turn comes: after an earlier reload, the executor serving then makes it.
      const serving = this.executors.current;
      const fresh = given ?? (serving.successor === undefined ? toExecutor<Batch, BatchOut>(where, next, '') : await serving.successor(next, options));
      const discard = (): Promise<void> => Promise.resolve(fresh.stop?.()).catch(() => undefined);
      try {
        await host.prepare(fresh as Executor<unknown, unknown>);
      } catch (e) {
        await discard();
        throw reloadFailed(where, e);
      }
      if (host.stopping()) {
        await discard();
        throw stoppedDuringReload(where);
      }
      this.executors.swap(fresh);
      this.#reloads++;
      this.version = options.version ?? String(this.#reloads + 1);
      host.swapped();
    };
    const done = this.#chain.catch(() => undefined).then(run);
    this.#chain = done.catch(() => undefined);
    return done;
  }

  /** Resolves once no reload is under way and every replaced executor has stopped. */
  async settled(): Promise<void> {
    await this.#chain; // never rejects: reload() stores it caught
    await this.executors.released();
  }
}
