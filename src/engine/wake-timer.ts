import type { Clock, TimerHandle } from '../core/clock';

/**
 * The host's one timer for "decide again at time t" (a `maxDelayMs` window or a policy's
 * `wakeAt`). Setting it for the time it is already set for keeps it, so a policy that answers the
 * same `wakeAt` on every decision does not churn timers.
 * @internal
 */
export class WakeTimer {
  #timer: TimerHandle | undefined;
  #at = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly wake: () => void,
  ) {}

  set(at: number): void {
    if (this.#timer !== undefined && this.#at === at) return;
    this.clear();
    this.#at = at;
    this.#timer = this.clock.setTimer(() => {
      this.#timer = undefined;
      this.#at = Infinity;
      this.wake();
    }, Math.max(0, at - this.clock.now()));
  }

  clear(): void {
    if (this.#timer === undefined) return;
    this.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }
}
