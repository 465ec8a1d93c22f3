import type { Clock, TimerHandle } from './clock';

interface ManualTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

/**
 * A clock that moves only when told to. Timers fire in time order (ties in creation order) during
 * {@link ManualClock.advance}. Use it to test batching decisions without real waits.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const host = new ModelHost(fn, { maxBatchSize: 8, maxDelayMs: 5, clock });
 * const p = host.inference(1);
 * await new Promise(setImmediate); // let the host look at its queue
 * clock.advance(5);                // the window closes; the batch is released
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers = new Set<ManualTimer>();

  /** @param start - the initial reading of {@link ManualClock.now}. @default 0 */
  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.add(timer);
    return timer;
  }

  clearTimer(handle: TimerHandle): void {
    this.#timers.delete(handle as ManualTimer);
  }

  /** How many timers are waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** When the next timer fires, or `undefined` if none is set. */
  get nextTimerAt(): number | undefined {
    return this.#next()?.at;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due, in order, with `now()` set to
   * each timer's due time while it runs. Timers set by those callbacks fire too if they fall due.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance expects a number of milliseconds >= 0, got ${ms}`);
    const end = this.#now + ms;
    for (let t = this.#next(); t !== undefined && t.at <= end; t = this.#next()) {
      this.#timers.delete(t);
      this.#now = t.at;
      t.fn();
    }
    this.#now = end;
  }

  #next(): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
