/**
 * The entry point of every worker thread: loads the user's module, builds the batch function from
 * its export, then answers `run` messages from the executor one by one. Not part of the public API.
 * @internal
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadWorkerTarget, type WorkerTarget } from './worker-target';
import type { FromWorker, ToWorker, WorkerBoot } from './protocol';
import { decodeFromPost, encodeForPost, reviveTensorDefault } from './transfer';
import { serializeError } from './wire-error';
import { enterBatch, leaveBatch } from './exit-guard';

const port = parentPort;
const boot = workerData as WorkerBoot;

function send(message: FromWorker, transferList: ArrayBuffer[] = []): void {
  (port as NonNullable<typeof port>).postMessage(message, transferList);
}

/** The batch's buffers that the result does not use: what goes back for reuse when the target keeps none. */
function spentBuffers(batch: unknown, result: readonly ArrayBuffer[]): ArrayBuffer[] {
  const used = new Set(result);
  return encodeForPost(batch, true).transferList.filter((b) => !used.has(b));
}

async function runOne(target: WorkerTarget, id: number, batch: unknown): Promise<void> {
  let value: unknown;
  let decoded: unknown;
  try {
    decoded = decodeFromPost(batch, reviveTensorDefault);
    // The process is exiting (process.exit() on the main thread): start nothing more.
    if (!enterBatch(boot.exitFlag)) return;
    try {
      value = await target.run(decoded);
    } finally {
      leaveBatch(boot.exitFlag);
    }
  } catch (e) {
    send({ kind: 'failed', id, error: serializeError(e) });
    return;
  }
  // The result is this thread's own, so its buffers move instead of being copied.
  const moved = encodeForPost(value, true);
  const spent = target.returnsBatch ? spentBuffers(decoded, moved.transferList) : [];
  try {
    send({ kind: 'result', id, value: moved.value, ...(spent.length > 0 ? { spent } : {}) }, [...moved.transferList, ...spent]);
  } catch {
    // A buffer that cannot move (Node's pooled Buffer memory is marked untransferable): copy instead.
    try {
      send({ kind: 'result', id, value: encodeForPost(value, false).value });
    } catch (e) {
      send({ kind: 'failed', id, error: serializeError(new TypeError(`the batch function's result cannot be sent to the main thread: ${(e as Error).message}`)) });
    }
  }
}

async function main(): Promise<void> {
  if (port === null) throw new Error('microbatch worker-main must run in a worker thread');
  let target: WorkerTarget;
  try {
    target = await loadWorkerTarget(boot);
  } catch (e) {
    send({ kind: 'start-failed', error: serializeError(e) });
    return;
  }
  port.on('message', (message: ToWorker) => {
    if (message.kind === 'run') {
      void runOne(target, message.id, message.batch);
    } else if (message.kind === 'stop') {
      Promise.resolve()
        .then(() => target.stop?.())
        .then(
          () => send({ kind: 'stopped' }),
          (e: unknown) => send({ kind: 'stopped', error: serializeError(e) }),
        );
    }
  });
  send({ kind: 'ready' });
}

void main();
