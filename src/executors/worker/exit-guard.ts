/**
 * Keeps `process.exit()` from tearing a worker thread down in the middle of a batch.
 *
 * Why: a native batch function whose work ends after its thread's environment was torn down throws
 * from C++ with no JavaScript to catch it, and the whole process aborts. With onnxruntime-node
 * (`session.run` finishing on its own thread pool) that is exit code 134 and "terminate called
 * after throwing an instance of 'Napi::Error'" instead of the code the program asked for: 10 exits
 * of 10 while a classifier batch ran in a worker, none while the workers were idle.
 *
 * How: each worker marks in a word of shared memory while its batch function runs. On the main
 * thread's `'exit'` event (emitted synchronously by `process.exit()`, before any worker is
 * stopped) the guard raises every worker's exiting flag, so none starts another batch, and blocks
 * with `Atomics.wait` until the batches running have returned, for at most `EXIT_WAIT_MS` in all.
 * Both sides write before they read (sequentially consistent), so either the worker sees the flag
 * and does not start, or the main thread sees the batch and waits for it.
 * @internal
 */
import { performance } from 'node:perf_hooks';

/** The longest `process.exit()` waits for running batches: past it, the exit goes on regardless. */
export const EXIT_WAIT_MS = 10_000;

const RUNNING = 0;
const EXITING = 1;

/** The flags of the live workers of this process. */
const live = new Set<Int32Array>();
let listening = false;

/** A new worker's flag (main thread): shared with the worker through its `workerData`. */
export function exitFlag(): Int32Array {
  const flag = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  live.add(flag);
  if (!listening) {
    listening = true;
    process.once('exit', waitForRunningBatches);
  }
  return flag;
}

/** The worker is gone: nothing to wait for. */
export function releaseExitFlag(flag: Int32Array): void {
  live.delete(flag);
}

/** Blocks the exiting main thread until no worker runs a batch (or `EXIT_WAIT_MS` passed). */
export function waitForRunningBatches(): void {
  for (const flag of live) Atomics.store(flag, EXITING, 1);
  const deadline = performance.now() + EXIT_WAIT_MS;
  for (const flag of live) {
    while (Atomics.load(flag, RUNNING) !== 0) {
      const left = deadline - performance.now();
      if (left <= 0) return;
      Atomics.wait(flag, RUNNING, 1, left);
    }
  }
}

/**
 * In the worker, before a batch: marks it running and returns `true`, or `false` when the process
 * is exiting (the batch must not start). Without a flag (a worker started otherwise) always `true`.
 */
export function enterBatch(flag: Int32Array | undefined): boolean {
  if (flag === undefined) return true;
  Atomics.store(flag, RUNNING, 1);
  if (Atomics.load(flag, EXITING) === 0) return true;
  leaveBatch(flag);
  return false;
}

/** In the worker, once the batch function has returned or thrown. */
export function leaveBatch(flag: Int32Array | undefined): void {
  if (flag === undefined) return;
  Atomics.store(flag, RUNNING, 0);
  Atomics.notify(flag, RUNNING);
}
