import type { Clock, TimerHandle } from '../core/clock';

// How every pending call in microbatch ends early: its deadline (a timer on the host's clock) and
// its caller's AbortSignal, watched by one mechanism. The engine's requests, the generation
// host's sequences, the response cache's waiting callers and the remote clients' calls all watch
// through a `CallWatch`: this is the one file that listens for `abort`. A signal holds one
// listener however many pending calls watch it (a server-wide shutdown signal given to every call
// would otherwise pass Node's 10-listener warning), and none once they have all settled (so a
// long-lived signal keeps no settled call alive). The wording of each refusal and early end is in settle-errors.ts.
//
// The plain lane never comes here: a call without options has no timer and no signal.

/**
 * The calls watching one signal: a doubly linked list of {@link CallWatch}es behind one `abort`
 * listener, added when the list gains its first call and removed when it loses its last, so a
 * signal shared by any number of calls holds one listener while some are pending and none once
 * they have all settled. Kept (weakly, by signal) while empty: a signal that comes back costs no
 * new list.
 * @internal
 */
class SignalWatchers {
  head: CallWatch | undefined = undefined;
  tail: CallWatch | undefined = undefined;
  readonly listener = (): void => this.fire();

  constructor(readonly signal: AbortSignal) {}

  add(w: CallWatch): void {
    w.watchers = this;
    w.prev = this.tail;
    if (this.tail === undefined) {
      this.head = w;
      this.signal.addEventListener('abort', this.listener, ONCE);
    } else this.tail.next = w;
    this.tail = w;
  }

  /** Takes `w` out; the last one out removes the listener. */
  remove(w: CallWatch): void {
    const { prev, next } = w;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    w.watchers = w.prev = w.next = undefined;
    if (this.head === undefined) this.signal.removeEventListener('abort', this.listener);
  }

  /**
   * The signal aborted: every call watching it, in the order they armed. Each is taken out before
   * its callback runs (which may settle, and so disarm, any call still in the list).
   */
  private fire(): void {
    for (let w = this.head; w !== undefined; w = this.head) {
      this.head = w.next;
      if (this.head === undefined) this.tail = undefined;
      else this.head.prev = undefined;
      const abort = w.onAbort;
      w.watchers = w.next = w.prev = w.onAbort = undefined;
      abort?.();
    }
  }
}

const ONCE = { once: true } as const;

/** The list of each signal a call has watched (weak: it goes with its signal). */
const watchersOf = new WeakMap<AbortSignal, SignalWatchers>();

/**
 * A call's deadline timer and abort watch. A class (not closures in a record) so that every
 * watched call has the same hidden class; the engine's request extras extend it. The callbacks
 * are the owner's: it decides what expiring or aborting means for its call (leave the queue,
 * discard a running result, take the call back from the far side) and settles it once.
 * @internal
 */
export class CallWatch {
  timer: TimerHandle = undefined;
  signal: AbortSignal | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;
  /** The list of calls watching {@link CallWatch.signal} while this one is in it, and its neighbours there. */
  watchers: SignalWatchers | undefined = undefined;
  prev: CallWatch | undefined = undefined;
  next: CallWatch | undefined = undefined;

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
      let watchers = watchersOf.get(signal);
      if (watchers === undefined) watchersOf.set(signal, (watchers = new SignalWatchers(signal)));
      watchers.add(this);
    }
  }

  /** Stops watching (the call settled): clears the timer and leaves its signal's list. Idempotent. */
  disarm(clock: Clock): void {
    if (this.timer !== undefined) {
      clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    if (this.watchers !== undefined) this.watchers.remove(this);
    this.signal = undefined;
    this.onAbort = undefined;
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
