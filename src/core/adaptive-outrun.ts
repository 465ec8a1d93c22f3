/**
 * Arrivals above capacity beyond what Poisson bursts over a busy period a budget long explain: at
 * 95% load such a window reads above capacity now and then, 10% above it rarely; at 120% it is the
 * rule (simulated, 1 + 0.5·n and 10 + 0.1·n ms models, seeds 6-25: every onset caught).
 */
const OUTRUN_RATIO = 1.1;

/**
 * The rate, as a multiple of the model's own speed, that the running excess of arrivals is counted
 * against (a one-sided CUSUM: each arrival adds its rows, the time since the last one takes off
 * what this rate would have brought, never below zero).
 */
const EXCESS_RATE = 1.05;

/**
 * The running excess, in requests of the mean size, that reads as a sustained overload. At 95% load
 * Poisson arrivals carry the excess past 64 requests about once in 300,000 climbs from zero
 * (e^(-0.197·64)); at 120% it grows by 0.15 of capacity per ms and passes in about
 * 64 / (0.15·capacity): 180-230 ms on the 1 + 0.5·n and 10 + 0.1·n ms models. With 1.03 and 64,
 * or 1.05 and 48, a 95% load with the budget 2% above greedy's slowest answer started overloads on
 * 2-3 of 24 seeds where the busy period's average started one (36-108 more refusals); with these,
 * the same as without the excess on 60 seeds. Where arrivals reach the host in bursts (an inline
 * model holds the event loop for a batch's run, and what arrived meanwhile is queued at its end)
 * the excess just after a burst is the burst, a run's worth of arrivals: on a model whose full
 * batch of 64 takes 1.4 ms, 61 requests at 95% load and 90 at 70% in a 2× spell. So it reads as
 * overload only while the arrivals of the last budget also came faster than `EXCESS_RATE` times
 * the model's own speed (simulated, that model inline with 2× spells, 3 seeds × 3 s: refused at
 * 70% load 4,605 requests a greedy host answered in time, now none; at 95% 10,858 where greedy
 * missed 11,808, now 1,133).
 */
const EXCESS_REQUESTS = 64;

/**
 * Tells a sustained overload from a burst or a slow spell before the backlog reaches the budget,
 * for the {@link microbatch!AdaptivePolicy}'s admission. Two figures:
 * - the model's own speed: the fastest full batch (the host's handoff included) the latency model
 *   estimated over the last one to two `epochMs`. A slow spell raises the current estimate, not
 *   this; so arrivals at 95% of the model's rate during a spell that slows it 1.3× do not read as
 *   overload (one the budget absorbs: a greedy host answers them in time). Not the median of
 *   recent full batches: where full batches run only in spells' backlogs (95% load on a model
 *   with a small fixed cost) that median is the spell's, and refused 1,781 requests greedy
 *   answered in time;
 * - the busy period's arrivals: rows that arrived since an arrival last found a slot free, or
 *   since an overload last ended on the model catching up with the arrivals (adaptive-admission.ts).
 *
 * Arrivals that outran the model's own speed by `OUTRUN_RATIO` over a busy period at least a
 * budget long are a sustained overload: the backlog grows at a fifth of capacity at 120% load and
 * reaches a 100 ms budget in about half a second, where requests admitted at its edge are answered
 * late (simulated at 120%: 58-164 late answers per onset, and a cascade of cut batches). Started
 * here instead, at a fraction of the budget, the overload keeps the queue short from the start.
 * So is a running excess of the busy period's arrivals over `EXCESS_RATE` times that speed past
 * `EXCESS_REQUESTS` requests: the ratio over the whole busy period is slow where the host was busy
 * long before the onset (a 10 + 0.1·n ms model at 70% load runs its batches back to back for
 * seconds, and 120% then read below 110% for a few hundred milliseconds: simulated, 20 seeds, 866
 * late answers of the onset where the best queue bound had 2; 263 with the excess).
 * The speed is trusted only a budget after it was first recorded: a first full batch run in a slow
 * spell (at 70% load full batches are rare), with a line fitted on spell batches, read a model 53%
 * slower than it is and refused requests at 70% load.
 * @internal
 */
export class Outrun {
  /** The fastest full batch in the current and the previous epoch (ms); Infinity before one. */
  #epochMin = Infinity;
  #previousMin = Infinity;
  #epochAt = -Infinity;
  /** When the speed was first recorded. */
  #since = Infinity;
  /** When the busy period started (see `idle`), and the rows that arrived since. */
  #busySince = -Infinity;
  #busyRows = 0;
  /** Rows that arrived in the busy period beyond `EXCESS_RATE` times the model's own speed (see `arrived`). */
  #excess = 0;
  #lastAt = -Infinity;
  /** The busy period's arrivals outran the model at some arrival (see `arrived`). */
  #outran = false;
  /** Every arrival counted, for the mean request's rows. */
  #rows = 0;
  #requests = 0;

  constructor(private readonly epochMs: number) {}

  /** The model's own full-batch time (ms, the handoff included); Infinity before one is recorded. */
  get nominalMs(): number {
    return Math.min(this.#epochMin, this.#previousMin);
  }

  /** Records the latency model's full-batch time `ms` (the handoff included) at `now`. */
  fullBatch(now: number, ms: number): void {
    if (now - this.#epochAt >= this.epochMs) {
      this.#previousMin = this.#epochMin;
      this.#epochMin = Infinity;
      this.#epochAt = now;
    }
    if (ms < this.#epochMin) this.#epochMin = ms;
    if (this.#since === Infinity) this.#since = now;
  }

  /**
   * Rows that arrive, at the busy period's rate up to `at`, while one full batch runs at the
   * model's own speed; NaN until the busy period is `minMs` long and a speed is recorded.
   */
  rowsPerFullBatch(at: number, minMs: number): number {
    const span = at - this.#busySince;
    const ms = this.nominalMs;
    return span >= minMs && ms !== Infinity ? (this.#busyRows / span) * ms : NaN;
  }

  /** How long the busy period has lasted at `at` (ms; Infinity before any arrival found a slot free). */
  busyFor(at: number): number {
    return at - this.#busySince;
  }

  /** An arrival found a slot free at `at`, or the model caught up with the arrivals: a busy period starts after it. */
  idle(at: number): void {
    this.#busySince = at;
    this.#busyRows = 0;
    this.#excess = 0;
    this.#outran = false;
  }

  /**
   * Counts an arrival of `rows` rows at `at` during the busy period, and tells whether the busy
   * period's arrivals outran `slots` slots running full batches of `maxBatchSize` rows at the
   * model's own speed, over at least `budgetMs`, at this arrival or an earlier one of the busy
   * period. `recentRate(at)` is the arrival rate over the last budget (rows per ms), read only
   * when the excess passes its mark.
   *
   * Once outrun, the busy period stays so until it ends: the tests pass their marks at moments
   * (a burst, the excess crossing its mark), and the overload starts only when the queue has also
   * grown past what a slight slowdown still ends in time (adaptive-admission.ts), which it may
   * reach after the moment passed (simulated, 10 + 0.1·n ms at 70% then 120% load: on one seed of
   * 40 the moment came at 108 rows queued, the queue grew to 163 before the next, and 32 answers
   * of the onset were late; none now).
   */
  arrived(at: number, rows: number, slots: number, maxBatchSize: number, budgetMs: number, recentRate: (at: number) => number): boolean {
    if (this.#count(at, rows, slots, maxBatchSize, budgetMs, recentRate)) this.#outran = true;
    return this.#outran;
  }

  /** `arrived`'s counting and tests at this arrival alone. */
  #count(at: number, rows: number, slots: number, maxBatchSize: number, budgetMs: number, recentRate: (at: number) => number): boolean {
    this.#busyRows += rows;
    this.#rows += rows;
    this.#requests++;
    const ms = this.nominalMs;
    // Counted only against a recorded speed: rows before one would all read as excess.
    this.#excess = ms === Infinity ? 0 : Math.max(0, this.#excess - (EXCESS_RATE * slots * maxBatchSize * (at - this.#lastAt)) / ms) + rows;
    this.#lastAt = at;
    if (at - this.#since < budgetMs) return false;
    // The excess counts only while the last budget's arrivals also came faster than it is
    // counted against: an inline model holds the event loop while a batch runs, so the arrivals of
    // a whole run reach the host at once, and the excess after such a burst is the burst (see
    // `EXCESS_REQUESTS`).
    if (this.#excess > (EXCESS_REQUESTS * this.#rows) / this.#requests && recentRate(at) * ms >= EXCESS_RATE * slots * maxBatchSize) return true;
    const span = at - this.#busySince;
    return span >= budgetMs && this.#busyRows * ms > OUTRUN_RATIO * slots * maxBatchSize * span;
  }
}
