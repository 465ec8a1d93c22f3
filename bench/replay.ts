/**
 * A machine's speed over time, recorded from the batches of live runs and replayed as the run-time
 * model of a simulated host, so that settings can be compared on the same machine.
 *
 * On a shared VM, two live runs of the same setting a few seconds apart differ by more than the
 * settings being compared (the adaptive bench's A/A control read 0.19–5.79× at 70–95% load): a
 * slow spell that falls in one setting's run decides its tail. A replay gives every setting the
 * same spells: each live batch's run time over the model's quiet run time for its size is the
 * machine's slowness factor from that batch's start; a simulated batch of `rows` rows starting at
 * `t` takes the quiet time for `rows` times the factor recorded at `t`. The policies and the host
 * are the real code on a `ManualClock`; only the clock is simulated.
 */

/** Slowness factors over time: `factor[i]` holds from `at[i]` until `at[i + 1]` (ms from the start). */
export class MachineTimeline {
  readonly #at: number[] = [];
  readonly #factor: number[] = [];
  #length = 0;

  /** Milliseconds recorded. */
  get length(): number {
    return this.#length;
  }

  /** Batches recorded. */
  get samples(): number {
    return this.#at.length;
  }

  /**
   * Appends one live run: its batches' start times (ms from the run's start, ascending) and
   * factors, and the run's length.
   */
  append(run: { readonly at: readonly number[]; readonly factor: readonly number[]; readonly lengthMs: number }): void {
    for (let i = 0; i < run.at.length; i++) {
      this.#at.push(this.#length + (run.at[i] as number));
      this.#factor.push(run.factor[i] as number);
    }
    this.#length += run.lengthMs;
  }

  /** The factor in force at `t` ms (wrapping around past the end; before the first batch, the first batch's). */
  factorAt(t: number): number {
    const at = this.#at;
    if (at.length === 0) return 1;
    const x = this.#length > 0 ? t % this.#length : t;
    let lo = 0;
    let hi = at.length - 1;
    if (x < (at[0] as number)) return this.#factor[0] as number;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((at[mid] as number) <= x) lo = mid;
      else hi = mid - 1;
    }
    return this.#factor[lo] as number;
  }

  /** The median factor over the batches recorded (1 is the quiet machine). */
  medianFactor(): number {
    const f = [...this.#factor].sort((a, b) => a - b);
    return f.length === 0 ? 1 : (f[Math.floor(f.length / 2)] as number);
  }
}

/** Records one live run's batches against the quiet run times, for {@link MachineTimeline.append}. */
export class RunRecorder {
  readonly at: number[] = [];
  readonly factor: number[] = [];
  readonly #start: number;
  readonly #quietMs: (rows: number) => number;

  constructor(startMs: number, quietMs: (rows: number) => number) {
    this.#start = startMs;
    this.#quietMs = quietMs;
  }

  /** A batch of `rows` rows started at `startedAt` (the host clock's time) and ran `runMs`. */
  batch(startedAt: number, rows: number, runMs: number): void {
    this.at.push(startedAt - this.#start);
    this.factor.push(runMs / this.#quietMs(rows));
  }
}
