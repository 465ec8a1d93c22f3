import { performance } from 'node:perf_hooks';

/**
 * Whether the event loop is being held: when it last reached its check phase, and how much it had
 * idled by then. One marker immediate per loop turn at most (armed by batches as they start), so a
 * burst of batches inside one macrotask costs one immediate, and the marker holds nothing but
 * these numbers (a closure over a batch would keep the batch alive until the loop turns).
 */
let armed = false;
let lastCheckAt = 0;

const onCheck = (): void => {
  armed = false;
  lastCheckAt = performance.now();
};

/**
 * Arms the marker for the next check phase and returns the loop's idle time so far. Call it
 * before starting work that may block: a model that blocks in an immediate of its own
 * (onnxruntime-node does) queues it after the marker.
 * @internal
 */
export function watchLoop(): number {
  if (!armed) {
    armed = true;
    setImmediate(onCheck);
  }
  return performance.nodeTiming.idleTime;
}

/**
 * True when the loop has gone `ms` or more (on `performance.now()`'s scale) without reaching a
 * check phase, and has not idled since `idleAt` (what {@link watchLoop} returned): it was blocked
 * (or saturated), so timers and I/O that fell due meanwhile have not run yet.
 * @internal
 */
export function loopHeldFor(ms: number, now: number, idleAt: number): boolean {
  return now - lastCheckAt >= ms && performance.nodeTiming.idleTime === idleAt;
}
