/**
 * Batch buffers a worker handed back after running them, kept for the next batch of the same byte
 * size. A classifier batch of 32 is a fresh 3.5 MB allocation; filling fresh memory costs 0.8–1.2
 * ms against 0.1 ms for memory used before (the page faults of a new mapping), on the main thread,
 * and the worker's free and the collections its external memory drives come on top
 * (docs/performance.md, section 11). Only whole buffers that nothing else references come here:
 * the ones a worker moved back (`WorkerExecutor` with `returnsBatch`), and gRPC request messages
 * once their call is answered (src/grpc/message-decoder.ts). Bounded, so that an idle process
 * keeps little.
 * @internal
 */

/** Smaller buffers come from Node's allocator cheaply enough. */
const MIN_BYTES = 64 * 1024;
/** Per byte size: one running, one ahead, one being filled, one spare. */
const PER_SIZE = 4;
const MAX_BYTES = 256 * 1024 * 1024;

const free = new Map<number, ArrayBuffer[]>();
let held = 0;
let hits = 0;
let misses = 0;

/**
 * Keeps `buffer` for reuse, when it is large enough and the pool has room (at most `keep` of its
 * byte size); the caller gives up every reference to it.
 * @internal
 */
export function giveBuffer(buffer: ArrayBuffer, keep = PER_SIZE): void {
  const bytes = buffer.byteLength;
  if (bytes < MIN_BYTES || held + bytes > MAX_BYTES) return;
  let list = free.get(bytes);
  if (list === undefined) free.set(bytes, (list = []));
  if (list.length >= keep) return;
  list.push(buffer);
  held += bytes;
}

/** A kept buffer of exactly `bytes`, its old contents still in it, or `undefined`. @internal */
export function takeBuffer(bytes: number): ArrayBuffer | undefined {
  if (bytes < MIN_BYTES) return undefined;
  const buffer = free.get(bytes)?.pop();
  if (buffer === undefined) {
    misses++;
    return undefined;
  }
  held -= bytes;
  hits++;
  return buffer;
}

/** What the pool holds and how often it served (for tests and diagnostics). @internal */
export function bufferPoolStats(): { buffers: number; bytes: number; hits: number; misses: number } {
  let buffers = 0;
  for (const list of free.values()) buffers += list.length;
  return { buffers, bytes: held, hits, misses };
}

/** Empties the pool (tests). @internal */
export function clearBufferPool(): void {
  free.clear();
  held = 0;
  hits = 0;
  misses = 0;
}
