import { performance } from 'node:perf_hooks';

/**
 * Whether the event loop is being held: when it last reached its check phase. While any batch runs
 * (in any host), an unreferenced marker immediate re-arms itself once per loop turn and records
 * the time; unreferenced, it neither keeps the process alive nor stops the loop from sleeping in
 * its poll phase. A burst of batches inside one macrotask costs one marker, and the marker holds
 * nothing but a number (a closure over a batch would keep the batch alive until the loop turns).
 */
let running = 0;
let armed = false;
let lastCheckAt = 0;

const onCheck = (): void => {
  armed = false;
  lastCheckAt = performance.now();
  if (running > 0) arm();
};

function arm(): void {
  armed = true;
  setImmediate(onCheck).unref();
}

/**
 * A batch starts: keeps the marker armed until it ends, and returns the loop's idle time so far.
 * Call it before starting work that may block: a model that blocks in an immediate of its own
 * (onnxruntime-node does) queues it after the marker.
 * @internal
 */
export function batchStarted(): number {
  running++;
  if (!armed) arm();
  return performance.nodeTiming.idleTime;
}

/**
 * A batch ends. True when it held the loop: it took `ms` or more (on `performance.now()`'s
 * scale), the loop has gone as long, and at least half the batch's time, without reaching a check
 * phase, and it has not idled since the batch started (`idleAt`, from {@link batchStarted}).
 * Timers and I/O that fell due meanwhile have not run yet. The "half" tells a blocking run (the
 * loop stood still for nearly all of it) from an asynchronous one on a busy loop (it turned many
 * times, the last turn a small part of the wait).
 * @internal
 */
export function batchEnded(ms: number, startedAt: number, now: number, idleAt: number): boolean {
  running--;
  const took = now - startedAt;
  const held = now - lastCheckAt;
  return took >= ms && held >= ms && held * 2 >= took && performance.nodeTiming.idleTime === idleAt;
}
