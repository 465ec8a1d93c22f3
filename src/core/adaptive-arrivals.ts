/**
 * Buckets the overload window is counted in: rows per `overloadMs / WINDOW_BUCKETS` of arrival
 * time, so that counting an arrival is an addition, not a push onto a list the window later drops
 * (that list, and the garbage it made, was 8% of the CPU profile of a closed loop on an identity
 * model). The window's far edge is thereby known to within one bucket (1.6% of `overloadMs`).
 */
const WINDOW_BUCKETS = 64;

/**
 * The arrivals an {@link microbatch!AdaptivePolicy} remembers: the last `rateWindow` of them (a ring,
 * for the arrival rate its waits are sized by) and the rows that arrived within the last
 * `overloadMs` (for its overload test). Written once per request, read once per decision.
 * @internal
 */
export class Arrivals {
  /** The last `window` arrivals' times and rows, a ring written at `#next`. */
  readonly #t: Float64Array;
  readonly #rows: Float64Array;
  #next = 0;
  #count = 0;
  /** Rows per bucket of arrival time (bucket `i` at `i % WINDOW_BUCKETS`), buckets `#oldest` to `#newest`. */
  readonly #buckets = new Float64Array(WINDOW_BUCKETS);
  /** Milliseconds of arrival time per bucket. */
  readonly #width: number;
  readonly #overloadMs: number;
  #oldest = -Infinity;
  #newest = -Infinity;
  /** Rows that arrived within the last `overloadMs` (as of the last {@link Arrivals.forget}), to within a bucket. */
  recentRows = 0;
  /** The first arrival's time. */
  first = Infinity;

  constructor(window: number, overloadMs: number) {
    this.#t = new Float64Array(window);
    this.#rows = new Float64Array(window);
    // A window of 0 counts the arrivals of the same instant (a microsecond's bucket).
    this.#width = Math.max(overloadMs, 1e-3) / WINDOW_BUCKETS;
    this.#overloadMs = overloadMs;
  }

  /**
   * True when the rows of the last `overloadMs` arrived faster than `rowsPerMs` (a capacity); never
   * before that much time has passed since the first arrival.
   */
  outran(now: number, rowsPerMs: number): boolean {
    return now - this.first >= this.#overloadMs && this.recentRows / this.#overloadMs > rowsPerMs;
  }

  /**
   * The arrival rate in rows per millisecond over about the last `ms` (at most `overloadMs`, also
   * for an infinite `ms`) up to `now`: the whole buckets that cover it, the newest one up to `now`;
   * 0 before any arrival.
   */
  recentRate(now: number, ms: number): number {
    if (this.#newest === -Infinity) return 0;
    this.forget(now);
    const w = this.#width;
    const to = Math.floor(now / w);
    const from = Math.max(this.#oldest, to - Math.min(WINDOW_BUCKETS, Math.ceil(ms / w)) + 1);
    let rows = 0;
    for (let i = from; i <= Math.min(to, this.#newest); i++) rows += this.#buckets[i % WINDOW_BUCKETS] as number;
    const span = now - Math.max(from * w, this.first);
    return span > 0 ? rows / span : 0;
  }

  /** Counts one arrival at `t` of `rows` rows. */
  record(t: number, rows: number): void {
    const at = this.#next;
    this.#t[at] = t;
    this.#rows[at] = rows;
    this.#next = at + 1 === this.#t.length ? 0 : at + 1;
    if (this.#count < this.#t.length) this.#count++;
    if (t < this.first) this.first = t;
    const b = Math.floor(t / this.#width); // times are >= 0 on every clock
    if (this.#newest === -Infinity) this.#oldest = this.#newest = b;
    else if (b > this.#newest) {
      this.#drop(b - WINDOW_BUCKETS); // a whole window older: their slots are reused
      this.#newest = b;
    } else if (b < this.#oldest) return; // older than the window already
    const slot = b % WINDOW_BUCKETS;
    this.#buckets[slot] = (this.#buckets[slot] as number) + rows;
    this.recentRows += rows;
  }

  /** Drops arrivals older than `overloadMs` from the overload window. */
  forget(now: number): void {
    // The bucket holding `now - overloadMs` is dropped whole: the window is counted short by under a bucket.
    if (this.#newest !== -Infinity) this.#drop(Math.floor(now / this.#width) - WINDOW_BUCKETS);
  }

  /** Empties the buckets up to `to` (those still counted) and moves the oldest past them. */
  #drop(to: number): void {
    if (to < this.#oldest) return;
    for (let i = Math.max(this.#oldest, to - WINDOW_BUCKETS + 1); i <= to; i++) {
      const slot = i % WINDOW_BUCKETS;
      this.recentRows -= this.#buckets[slot] as number;
      this.#buckets[slot] = 0;
    }
    this.#oldest = to + 1;
  }

  /**
   * Arrival rate in rows per millisecond over the remembered arrivals, measured up to `now` so
   * that it decays during a quiet spell (an idle host forgets an old burst).
   */
  rate(now: number): number {
    const n = this.#count;
    if (n < 2) return 0;
    const ts = this.#t;
    const rs = this.#rows;
    let first = Infinity;
    let rows = 0;
    for (let i = 0; i < n; i++) if ((ts[i] as number) < first) first = ts[i] as number;
    for (let i = 0; i < n; i++) if ((ts[i] as number) > first) rows += rs[i] as number;
    const span = now - first;
    return span > 0 ? rows / span : 0;
  }
}
