import { Handoff } from '../../src/core/adaptive-handoff';

// The host's time per batch beyond the model's run (merge, the hop to a worker and back, settling):
// learned only from a decision that follows the end of the batch the previous one released.

/** One batch's course: released at `at` with nothing in flight, run for `runMs`, then the next decision at `next`. */
function cycle(h: Handoff, at: number, runMs: number, next: number, oldestEnqueuedAt: number, inFlight = 0): void {
  h.decided(at, oldestEnqueuedAt, inFlight);
  h.released(at);
  h.ended(runMs);
  h.decided(next, oldestEnqueuedAt, inFlight);
}

describe('Handoff', () => {
  test('a batch released with nothing in flight, ended, and the decision its end allows: the gap is learned', () => {
    const h = new Handoff();
    cycle(h, 100, 26, 130, 90); // a request waiting since before the release: the slot freeing made the decision
    expect(h.ms).toBe(4);
    // Later samples are smoothed (a fifth of the difference once past the first few).
    for (let i = 0; i < 4; i++) cycle(h, 200, 26, 230, 150);
    cycle(h, 300, 26, 335, 250);
    expect(h.ms).toBeCloseTo(5, 10);
  });

  test('no sample from a decision an arrival made at an idle host (the oldest request came after the release)', () => {
    const h = new Handoff();
    h.decided(100, 90, 0);
    h.released(100);
    h.ended(26);
    h.decided(500, 480, 0);
    expect(h.ms).toBe(0);
  });

  test('no sample when two batches ended with no decision between (one went ahead), nor with another batch in flight', () => {
    const h = new Handoff();
    h.decided(100, 90, 0);
    h.released(100);
    h.ended(26);
    h.ended(26); // the batch sent ahead ended too
    h.decided(160, 90, 0);
    expect(h.ms).toBe(0);
    cycle(h, 200, 26, 240, 150, 1); // a second slot: another batch runs beside this one
    expect(h.ms).toBe(0);
  });

  test('negative gaps (a clock read early) count as 0', () => {
    const h = new Handoff();
    cycle(h, 100, 26, 120, 90);
    expect(h.ms).toBe(0);
  });
});
