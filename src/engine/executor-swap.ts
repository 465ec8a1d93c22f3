import type { Executor, ReloadOptions } from '../executors/executor';

export type { ReloadOptions } from '../executors/executor';
import { fail, rejectUnknownKeys } from '../core/options';

/** One executor the host has run batches on, and how many of its batches are still running. */
interface Generation<Batch, BatchOut> {
  readonly executor: Executor<Batch, BatchOut>;
  running: number;
  retired: boolean;
  release: (() => void) | undefined;
}

/**
 * The host's executor, replaceable while it runs (`host.reload`): new batches run on the current
 * executor; each batch holds the generation it started in, and a replaced executor is stopped
 * once the last batch that started on it has ended, so its callers are answered by it.
 * @internal
 */
export class ExecutorSwap<Batch, BatchOut> {
  #current: Generation<Batch, BatchOut>;
  readonly #releases = new Set<Promise<void>>();

  constructor(first: Executor<Batch, BatchOut>) {
    this.#current = { executor: first, running: 0, retired: false, release: undefined };
  }

  get current(): Executor<Batch, BatchOut> {
    return this.#current.executor;
  }

  /** A batch starts: it belongs to the current generation until it ends. */
  begin(): Generation<Batch, BatchOut> {
    const g = this.#current;
    g.running++;
    return g;
  }

  /** A batch ends; the last batch of a replaced executor releases it. */
  end(token: unknown): void {
    const g = token as Generation<Batch, BatchOut>;
    g.running--;
    if (g.retired && g.running === 0) g.release?.();
  }

  /** Makes `next` current; the old executor is stopped once its batches have ended. */
  swap(next: Executor<Batch, BatchOut>): void {
    const old = this.#current;
    this.#current = { executor: next, running: 0, retired: false, release: undefined };
    old.retired = true;
    const released = new Promise<void>((resolve) => {
      old.release = resolve;
      if (old.running === 0) resolve();
    }).then(async () => {
      await old.executor.stop?.();
    });
    const tracked = released.catch(() => undefined).finally(() => this.#releases.delete(tracked));
    this.#releases.add(tracked);
  }

  /** Resolves when every replaced executor has been stopped. */
  async released(): Promise<void> {
    await Promise.all([...this.#releases]);
  }
}

/** Checks `reload()`'s options before anything loads. @internal */
export function checkReloadOptions(where: string, options: unknown, moreKeys: readonly string[] = []): asserts options is ReloadOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object such as { version }', options);
  rejectUnknownKeys(where, options as object, ['version', ...moreKeys]);
  const { version } = options as ReloadOptions;
  if (version !== undefined && (typeof version !== 'string' || version === '' || version.includes('/'))) {
    fail(where, 'version', 'a non-empty string without "/"', version);
  }
}
