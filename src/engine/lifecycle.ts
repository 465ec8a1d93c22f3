import { toError } from '../core/describe';
import { badDrain } from './settle-errors';

/** Options of a host's `stop()` ({@link ModelHost.stop}, `GenerationHost.stop`). */
export interface StopOptions {
  /**
   * `true`: answer every accepted request first. `false`: reject queued requests with
   * `HostStoppedError` (running batches still finish and deliver).
   * @default true
   */
  drain?: boolean;
}

/** Where a host is in its life: made, starting its executor, ready to run, or failed to start. */
export type LifecycleState = 'new' | 'starting' | 'ready' | 'failed';

/**
 * The life of a host, shared by `ModelHost` and `GenerationHost`: new → starting → ready | failed
 * (`start()` is idempotent), then stopping, with or without draining (`stop()` returns the same
 * promise every time, and a later `drain: false` still rejects what is waiting), and the waiters
 * of `onIdle()`. The host says what starting, abandoning and finishing mean for it.
 * @internal
 */
export class Lifecycle {
  state: LifecycleState = 'new';
  /** Set by the first `stop()`: no new calls. */
  stopping = false;
  /** What the latest `stop()` asked. */
  draining = false;
  /** Why the start failed (the state is then `'failed'`). */
  startError: Error | undefined;
  #started: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;
  #idleWaiters: Array<() => void> = [];

  /**
   * @param name - the host's name, for messages.
   * @param isIdle - whether nothing waits or runs.
   */
  constructor(
    readonly name: string,
    readonly isIdle: () => boolean,
  ) {}

  /**
   * Starts once: runs `begin` (its failure, as an `Error` named by `label`, becomes
   * {@link Lifecycle.startError}), then `ready` or `failed`; later calls return the same promise.
   */
  start(begin: () => Promise<void>, label: string, ready?: () => void, failed?: () => void): Promise<void> {
    if (this.#started === undefined) {
      this.state = 'starting';
      this.#started = (async () => {
        try {
          await begin();
          this.state = 'ready';
        } catch (e) {
          this.state = 'failed';
          this.startError = toError(e, label);
          throw this.startError;
        }
      })();
      if (ready !== undefined || failed !== undefined) this.#started.then(ready, failed ?? (() => undefined));
    }
    return this.#started;
  }

  /** Resolves when the start has ended, however it ended (at once if it never began). */
  async settled(): Promise<void> {
    await this.#started?.catch(() => undefined);
  }

  /**
   * Stops: no new calls from now on. Without draining, `abandon` ends what is waiting (on every
   * call). The first call makes the promise every call returns: `finish`, once the host is idle.
   * Either runs with {@link Lifecycle.stopping} already set.
   */
  stop(options: StopOptions | undefined, abandon: () => void, finish: () => Promise<void>): Promise<void> {
    const drain = options?.drain ?? true;
    if (typeof drain !== 'boolean') return Promise.reject(badDrain(this.name, drain));
    this.stopping = true;
    this.draining = drain;
    if (!drain) abandon();
    this.#stopped ??= this.onIdle().then(finish);
    this.notifyIdle();
    return this.#stopped;
  }

  /** Resolves when nothing waits or runs (at once if already so). */
  onIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Wakes the idle waiters if the host is idle now. */
  notifyIdle(): void {
    if (this.#idleWaiters.length === 0 || !this.isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}
