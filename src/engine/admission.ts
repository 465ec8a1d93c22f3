import type { Clock, TimerHandle } from '../core/clock';

// How every pending call in microbatch ends early: its deadline (a timer on the host's clock) and
// its caller's AbortSignal, watched by one mechanism. The engine's requests, the generation
// host's sequences, the response cache's waiting callers and the remote clients' calls all watch
// through a `CallWatch`: this is the one file that listens for `abort`, so a listener is always
// removed when its call settles (a long-lived signal shared by many calls would otherwise keep
// every settled call alive). The wording of each refusal and early end is in settle-errors.ts.
//
// The plain lane never comes here: a call without options has no timer and no signal.

/**
 * A call's deadline timer and abort listener. A class (not closures in a record) so that every
 * watched call has the same hidden class; the engine's request extras extend it. The callbacks
 * are the owner's: it decides what expiring or aborting means for its call (leave the queue,
 * discard a running result, take the call back from the far side) and settles it once.
 * @internal
 */
export class CallWatch {
  timer: TimerHandle = undefined;
  signal: AbortSignal | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;

  /**
   * Starts watching: `expire` runs after `timeoutMs` on `clock` (`Infinity`: never), `abort` when
   * `signal` aborts (read its `reason` from {@link CallWatch.signal}). Each runs at most once, and
   * neither after {@link CallWatch.disarm}.
   */
  arm(clock: Clock, timeoutMs: number, expire: () => void, signal: AbortSignal | undefined, abort: () => void): void {
    if (timeoutMs !== Infinity) this.timer = clock.setTimer(expire, timeoutMs);
    if (signal !== undefined) {
      this.signal = signal;
      this.onAbort = abort;
      signal.addEventListener('abort', abort, { once: true });
    }
  }

  /** Stops watching (the call settled): clears the timer and removes the listener. Idempotent. */
  disarm(clock: Clock): void {
    if (this.timer !== undefined) {
      clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    if (this.signal !== undefined && this.onAbort !== undefined) {
      this.signal.removeEventListener('abort', this.onAbort);
      this.signal = undefined;
      this.onAbort = undefined;
    }
  }
}

/**
 * A caller's promise with its watch, settled exactly once: by its answer, its deadline, its
 * signal, or whatever else its owner decides (a lost connection, a stopped host). What the
 * response cache hands each caller of a shared computation, and what a remote client holds per
 * call in flight.
 * @internal
 */
export class PendingCall<T> extends CallWatch {
  settled = false;

  constructor(
    readonly clock: Clock,
    readonly resolve: (value: T) => void,
    readonly reject: (error: Error) => void,
  ) {
    super();
  }

  /**
   * Makes a call and its promise: `watch` runs with the call before the promise is returned
   * (to arm it, or settle it at once).
   */
  static open<T>(clock: Clock, watch: (call: PendingCall<T>) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => watch(new PendingCall<T>(clock, resolve, reject)));
  }

  /** Settles with `error`, or else with `value`; false when it was settled already. */
  settle(error: Error | undefined, value?: T): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.disarm(this.clock);
    if (error === undefined) this.resolve(value as T);
    else this.reject(error);
    return true;
  }
}
