import { performance } from 'node:perf_hooks';

/** An opaque timer handle returned by {@link Clock.setTimer}. */
export type TimerHandle = unknown;

/**
 * The source of time for a host. Injecting one makes every scheduling decision reproducible in
 * tests (see {@link ManualClock}); the default is {@link systemClock}.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * const host = new ModelHost(fn, { maxBatchSize: 8, maxDelayMs: 5, clock });
 * clock.advance(5); // fires the 5 ms batching window
 * ```
 */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences matter). */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds. */
  setTimer(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer made by {@link Clock.setTimer}; unknown or fired handles are ignored. */
  clearTimer(handle: TimerHandle): void;
}

/** The real clock: `performance.now()` and Node timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
