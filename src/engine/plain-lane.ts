import type { ReleasedBatch } from './batch-run';
import { PendingRequest } from './request';
import type { RequestQueue } from './request-queue';

/**
 * The most slots a lane batch's arrays are made with: enough for the usual batch sizes, and no
 * large allocation for a lone request on a host with a huge `maxBatchSize` (beyond it they grow).
 */
const PRESIZE_MAX = 256;

/** A promise's resolve function: given a rejected promise, it rejects. */
export type Settle<Out> = (value: Out | PromiseLike<Out>) => void;

/**
 * Requests in the order they came, already cut into batches, without an object per request: what
 * a request with no per-request options (no signal, timeout or priority) costs on a host whose
 * settings can never need one (see `ModelHost`'s lane rule). Each batch keeps parallel arrays of
 * items, resolve functions and enqueue times, and is handed to the batch run as it is when it is
 * taken whole. Measured against the request-object queue (compiled, separate processes,
 * alternating rounds): the request object and the copies into and out of the queue were ~12% of
 * the engine's cost per request (docs/performance.md, "Profiled, fixed, before and after").
 * @internal
 */
export class LaneBatch<In, Out> implements ReleasedBatch<In> {
  /**
   * Items, then resolve functions, in slots `0 .. count - 1`. Both arrays are made at the batch's
   * full size (up to `PRESIZE_MAX` slots, growing past it) and trimmed to `count` when the batch
   * leaves the lane: grown by `push` they were reallocated three times on the way to 64 (measured:
   * ~10% of the engine's cost per request with one batch in flight).
   */
  readonly items: In[];
  /**
   * Each request's promise's resolve function, and nothing for reject: a request rejects by being
   * resolved with a rejected promise (`rejectAt`), which costs two ticks on the error path and saves
   * an array push per request on every path (measured: 3–5% of the engine's cost per request).
   */
  readonly resolves: Array<Settle<Out>>;
  /** Requests in the batch. */
  count = 0;
  /**
   * Enqueue times, run-length coded: entry `k` says requests from index `runStarts[k]` on came at
   * `runTimes[k]`. The host reads the clock once per burst of calls, so a burst is one run and a
   * request costs one comparison here instead of a stored number.
   */
  readonly runStarts: number[] = [];
  readonly runTimes: number[] = [];
  /** The lane's burst that the last run belongs to. */
  runSeq = -1;
  startedAt = 0;

  /** @param capacity - the most requests it will hold (its arrays start at up to this size). */
  constructor(capacity: number) {
    const slots = Math.min(capacity, PRESIZE_MAX);
    this.items = new Array<In>(slots);
    this.resolves = new Array<Settle<Out>>(slots);
  }

  get length(): number {
    return this.count;
  }
  get rows(): number {
    return this.count;
  }

  /** Cuts the arrays to the requests they hold (before the batch leaves the lane). */
  trim(): this {
    if (this.items.length !== this.count) {
      this.items.length = this.count;
      this.resolves.length = this.count;
    }
    return this;
  }
  start(startedAt: number): readonly In[] {
    this.startedAt = startedAt;
    return this.items;
  }
  enqueuedAt(i: number): number {
    const starts = this.runStarts;
    let k = starts.length - 1;
    while (k > 0 && (starts[k] as number) > i) k--;
    return this.runTimes[k] as number;
  }

  /** Rejects request `i`'s promise with `error`. */
  rejectAt(i: number, error: Error): void {
    (this.resolves[i] as Settle<Out>)(Promise.reject(error));
  }

  /** Appends one request (the slow way: the lane's own `push` appends by burst). */
  append(item: In, enqueuedAt: number, resolve: Settle<Out>): void {
    const times = this.runTimes;
    const n = this.count;
    if (times.length === 0 || times[times.length - 1] !== enqueuedAt) {
      this.runStarts.push(n);
      times.push(enqueuedAt);
    }
    this.items[n] = item;
    this.resolves[n] = resolve;
    this.count = n + 1;
  }
  context(): unknown {
    return undefined;
  }

  /** Moves the first `n` requests to the end of `to` (a rare path: one at a time is fine). */
  moveTo(to: LaneBatch<In, Out>, n: number): void {
    const times = Array.from({ length: this.count }, (_, i) => this.enqueuedAt(i));
    for (let i = 0; i < n; i++) to.append(this.items[i] as In, times[i] as number, this.resolves[i] as Settle<Out>);
    this.items.splice(0, n);
    this.resolves.splice(0, n);
    this.count -= n;
    this.runStarts.length = 0;
    this.runTimes.length = 0;
    for (let i = n; i < times.length; i++) {
      const at = times[i] as number;
      if (i === n || this.runTimes[this.runTimes.length - 1] !== at) {
        this.runStarts.push(i - n);
        this.runTimes.push(at);
      }
    }
  }
}

/** The host's plain requests, FIFO, formed into batches of up to `maxRows` as they arrive. @internal */
export class PlainLane<In, Out> {
  #batches: Array<LaneBatch<In, Out>> = [];
  /** The last formed batch while it is still waiting (new requests join it). */
  #last: LaneBatch<In, Out> | undefined = undefined;
  /** Requests waiting. */
  size = 0;
  // The current burst: its enqueue time, and a number that changes with it. A request compares
  // the small integer, not the time: a time read or passed per request is a boxed double, an
  // allocation each (measured: ~11 ns per request in the overhead scenario).
  #at = 0;
  #seq = 0;

  /** Requests pushed from now on were enqueued at `at` (the host calls this once per burst). */
  stamp(at: number): void {
    if (at === this.#at) return;
    this.#at = at;
    this.#seq++;
  }

  /**
   * Appends a request at the stamped time, to the last formed batch if it has room for it. Small
   * on purpose, so that it inlines into `inference()`: opening a batch or a run is `#prepare`'s.
   */
  push(item: In, resolve: Settle<Out>, maxRows: number): void {
    let b = this.#last;
    if (b === undefined || b.count >= maxRows || b.runSeq !== this.#seq) b = this.#prepare(maxRows);
    const n = b.count;
    b.items[n] = item;
    b.resolves[n] = resolve;
    b.count = n + 1;
    this.size++;
  }

  /** The batch the next request joins, with a run open for the current burst. */
  #prepare(maxRows: number): LaneBatch<In, Out> {
    let b = this.#last;
    if (b === undefined || b.count >= maxRows) {
      b = this.#last = new LaneBatch<In, Out>(maxRows);
      this.#batches.push(b);
    }
    if (b.runSeq !== this.#seq) {
      b.runSeq = this.#seq;
      b.runStarts.push(b.count);
      b.runTimes.push(this.#at);
    }
    return b;
  }

  /** Enqueue time of the oldest waiting request; only valid when `size > 0`. */
  oldestEnqueuedAt(): number {
    return (this.#batches[0] as LaneBatch<In, Out>).runTimes[0] as number;
  }

  /**
   * Removes and returns the oldest `min(maxRows, size)` requests (size > 0): the first formed batch
   * itself when it is exactly that, otherwise a new batch cut and joined from the formed ones (after
   * `configure()` changed `maxBatchSize`, or a policy released fewer rows).
   */
  take(maxRows: number): LaneBatch<In, Out> {
    const batches = this.#batches;
    const head = batches[0] as LaneBatch<In, Out>;
    if (head.length === Math.min(maxRows, this.size)) {
      batches.shift();
      if (head === this.#last) this.#last = undefined;
      this.size -= head.length;
      return head.trim();
    }
    const out = new LaneBatch<In, Out>(maxRows);
    while (out.length < maxRows && batches.length > 0) {
      const first = batches[0] as LaneBatch<In, Out>;
      first.moveTo(out, Math.min(maxRows - out.length, first.length));
      if (first.length === 0) batches.shift();
    }
    if (batches.length === 0) this.#last = undefined;
    this.size -= out.length;
    return out.trim();
  }

  /** Removes and returns every waiting request, as the batches they were in. */
  clear(): Array<LaneBatch<In, Out>> {
    const all = this.#batches;
    this.#batches = [];
    this.#last = undefined;
    this.size = 0;
    return all;
  }

  /** Moves every waiting request into `queue` as request objects, in order (see `ModelHost`'s lane rule). */
  spill(queue: RequestQueue<PendingRequest<In, Out>>): void {
    for (const b of this.clear()) {
      for (let i = 0; i < b.length; i++) {
        const resolve = b.resolves[i] as Settle<Out>;
        // No `policy.enqueued` here: only the greedy policy, which counts no arrivals, has a lane.
        queue.push(new PendingRequest<In, Out>(b.items[i] as In, 1, b.enqueuedAt(i), resolve, (error) => resolve(Promise.reject(error))));
      }
    }
  }
}
