/**
 * The arrivals an {@link microbatch!AdaptivePolicy} remembers: the last `rateWindow` of them (a ring,
 * for the arrival rate its waits are sized by) and those within the last `overloadMs` (for its
 * overload test). Written once per request, read once per decision.
 * @internal
 */
export class Arrivals {
  /** The last `window` arrivals' times and rows, a ring written at `#next`. */
  readonly #t: Float64Array;
  readonly #rows: Float64Array;
  #next = 0;
  #count = 0;
  /** Arrivals within the last `overloadMs` (times and rows, oldest first, from `#head`). */
  #recentT: number[] = [];
  #recentRows: number[] = [];
  #head = 0;
  /** Rows that arrived within the last `overloadMs` (as of the last {@link Arrivals.forget}). */
  recentRows = 0;
  /** The first arrival's time. */
  first = Infinity;

  constructor(
    window: number,
    private readonly overloadMs: number,
  ) {
    this.#t = new Float64Array(window);
    this.#rows = new Float64Array(window);
  }

  /** Counts one arrival at `t` of `rows` rows. */
  record(t: number, rows: number): void {
    const at = this.#next;
    this.#t[at] = t;
    this.#rows[at] = rows;
    this.#next = at + 1 === this.#t.length ? 0 : at + 1;
    if (this.#count < this.#t.length) this.#count++;
    if (t < this.first) this.first = t;
    this.#recentT.push(t);
    this.#recentRows.push(rows);
    this.recentRows += rows;
  }

  /** Drops arrivals older than `overloadMs` from the overload window. */
  forget(now: number): void {
    const since = now - this.overloadMs;
    while (this.#head < this.#recentT.length && (this.#recentT[this.#head] as number) < since) {
      this.recentRows -= this.#recentRows[this.#head] as number;
      this.#head++;
    }
    // Drop the consumed prefix of the overload window once it dominates (amortised O(1)).
    if (this.#head > 1024 && this.#head * 2 > this.#recentT.length) {
      this.#recentT = this.#recentT.slice(this.#head);
      this.#recentRows = this.#recentRows.slice(this.#head);
      this.#head = 0;
    }
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
