/**
 * Heap ballast for `microbatch serve`: memory the server holds, and never reads, so that V8 stops
 * collecting its old generation over and over.
 *
 * Why. V8 starts marking the old generation (towards a mark-compact) as soon as the room left under
 * its limit is smaller than the young generation, since one scavenge could promote that much. A
 * server's own heap is small (about 8 MB for `microbatch serve` on one model) while the young
 * generation grows to 16 MB under load, and the limit V8 sets after each mark-compact leaves less
 * room than that: the next marking starts at once. Measured on the classifier at 64 connections
 * (2-core VM, Node 20): about 17 mark-compacts a second, four GC helper threads using a fifth of a
 * core, the main thread paused 6% of the time, and the model's worker thread waiting for a core it
 * shares with them. With the ballast the old generation starts above 32 MB, the limit leaves more
 * room than the young generation, and a mark-compact comes every few seconds (docs/performance.md,
 * section 11). Node's `--initial-old-space-size=64` does the same, but only where the process is
 * started with it; the ballast works however `serve` was launched (npx, node, a process manager).
 * It is the HTTP path that gains (3–6% more requests a second): gRPC's collections are started by
 * its external memory (each request's frames joined into one buffer), which the ballast leaves as
 * it is; src/grpc/message-decoder.ts reuses those buffers instead.
 *
 * What it costs: the ballast's memory, and nothing per collection: it is arrays of plain doubles,
 * which hold no pointers for the marker to follow and sit in the large-object space, which is never
 * compacted.
 */

/** Doubles per ballast chunk: 512 KiB, past V8's largest regular object, so each chunk is one large object. */
const CHUNK = 65_536;

/** The chunks held, for the life of the process (a server exits when it stops). */
const held: number[][] = [];

/**
 * Holds at least `mb` MiB of ballast in the old generation (a second call with a larger `mb` adds
 * the difference; a smaller or equal one does nothing). 0 holds none.
 * @internal
 */
export function holdHeapBallast(mb: number): void {
  const want = Math.ceil((mb * 1024 * 1024) / (CHUNK * 8));
  if (held.length >= want) return;
  // Built by push, so that the elements are packed doubles; copies keep that kind.
  const template: number[] = [];
  for (let i = 0; i < CHUNK; i++) template.push(0.5);
  while (held.length < want) held.push(template.slice());
}

/** MiB of ballast held. @internal */
export function heapBallastMb(): number {
  return (held.length * CHUNK * 8) / (1024 * 1024);
}
