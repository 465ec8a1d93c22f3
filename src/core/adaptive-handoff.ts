/**
 * What a batch costs the host beyond the model's own run time, learned from the batches the
 * {@link microbatch!AdaptivePolicy} releases: from the decision that released a batch to the
 * decision its end allows, less its run time. That is the merge, the hop to a worker thread and
 * back, and settling the answers: time in which the model does not run, which the plan must count
 * per batch. Measured live on the PaddleOCR classifier in one worker: 1–4 ms per ~28 ms batch.
 * Without it the plan took a cut batch to cost only the model's fixed cost (0.4 ms), and at an
 * overload's onset cut its batches to 31, 28, 24, 11, 8, 6, 2, 1 and 2 rows in a row, each paying
 * the hop; and the check on arrival chained full batches that much short each. On a simulated clock
 * (decisions at the instant a batch ends) it stays 0.
 *
 * A sample is taken only where it means that: one batch slot (the model runs one batch at a time),
 * the batch released by a decision (not sent ahead), and the next decision made because that batch
 * ended with a request waiting since before it was released (not because a request arrived at an
 * idle host).
 * @internal
 */
export class Handoff {
  /** The learned time per batch beyond its run time (ms); 0 until measured. */
  ms = 0;
  /** When the batch released last started its course (a decision with nothing else in flight), else NaN. */
  #releasedAt = NaN;
  /** The run time of the batch that ended last. */
  #runMs = NaN;
  /** Batches ended since the last decision: a sample needs exactly one (another one went ahead otherwise). */
  #ended = 0;
  /** In flight at the decision being made. */
  #inFlight = 0;
  #samples = 0;

  /** At the start of every decision: takes the sample the last batch's end gives, if it gives one. */
  decided(now: number, oldestEnqueuedAt: number, inFlight: number): void {
    this.#inFlight = inFlight;
    if (inFlight === 0 && this.#ended === 1 && oldestEnqueuedAt <= this.#releasedAt) {
      const sample = Math.max(0, now - this.#releasedAt - this.#runMs);
      // Learned quickly at first (the onset of an overload is when it matters), then smoothed.
      this.ms += (sample - this.ms) * Math.max(0.2, 1 / ++this.#samples);
    }
    this.#releasedAt = NaN;
    this.#ended = 0;
  }

  /** A decision released a batch at `now`. */
  released(now: number): void {
    this.#releasedAt = this.#inFlight === 0 ? now : NaN;
    this.#ended = 0;
  }

  /** A batch ended after running `runMs`. */
  ended(runMs: number): void {
    this.#runMs = runMs;
    this.#ended++;
  }
}
