/**
 * Numbers seen during one dashboard tick, for its percentiles: a growable buffer reused every
 * tick, so watching allocates nothing per event once it has grown to the load's size.
 * @internal
 */
export class Samples {
  #values = new Float64Array(64);
  #n = 0;

  push(value: number): void {
    if (this.#n === this.#values.length) {
      const bigger = new Float64Array(this.#values.length * 2);
      bigger.set(this.#values);
      this.#values = bigger;
    }
    this.#values[this.#n++] = value;
  }

  /** The 50th and 99th percentiles (nearest rank) of what was pushed since the last reset; `null` when nothing was. */
  percentiles(): [number, number] | null {
    if (this.#n === 0) return null;
    const sorted = this.#values.subarray(0, this.#n).sort();
    return [nearestRank(sorted, 0.5), nearestRank(sorted, 0.99)];
  }

  reset(): void {
    this.#n = 0;
  }
}

function nearestRank(sorted: Float64Array, q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] as number;
}

/** Counts by a name (an outcome, a release reason) during one tick. */
function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

/**
 * What one host's events said during one tick: requests by outcome, batches by release reason,
 * queue waits (per request) and run times (per batch), times to first token (per sequence).
 * @internal
 */
export class HostWindow {
  outcomes: Record<string, number> = {};
  reasons: Record<string, number> = {};
  readonly queueMs = new Samples();
  readonly runMs = new Samples();
  readonly ttftMs = new Samples();

  request(outcome: string, rows: number, queueMs: number): void {
    bump(this.outcomes, outcome);
    // Refusals never queued (0 rows): as in the Prometheus histogram, their 0 wait is left out.
    if (rows > 0) this.queueMs.push(queueMs);
  }

  batch(reason: string, runMs: number): void {
    bump(this.reasons, reason);
    this.runMs.push(runMs);
  }

  /** The tick's summary, and a fresh start for the next. */
  take(): WindowSummary {
    const out: WindowSummary = {
      outcomes: this.outcomes,
      reasons: this.reasons,
      queueMs: this.queueMs.percentiles(),
      runMs: this.runMs.percentiles(),
      ttftMs: this.ttftMs.percentiles(),
    };
    this.outcomes = {};
    this.reasons = {};
    this.queueMs.reset();
    this.runMs.reset();
    this.ttftMs.reset();
    return out;
  }
}

/** One tick of one host's events, as the page receives it. @internal */
export interface WindowSummary {
  /** Requests settled in the tick, by outcome (`ok`, `queue-full`, `timeout`, `shed`, `aborted`, ...). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Batches released in the tick, by reason (`full`, `timer`, `idle`, ...). */
  readonly reasons: Readonly<Record<string, number>>;
  /** Queue wait p50 and p99 of the tick's requests, in ms; `null` with none. */
  readonly queueMs: [number, number] | null;
  /** Run time p50 and p99 of the tick's batches, in ms; `null` with none. */
  readonly runMs: [number, number] | null;
  /** Time to first token p50 and p99 of the tick's ended sequences, in ms; `null` with none. */
  readonly ttftMs: [number, number] | null;
}
