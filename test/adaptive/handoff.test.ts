import { Handoff } from '../../src/core/adaptive-handoff';
import { AdaptivePolicy } from '../../src/core/adaptive-policy';
import type { QueuedRequestInfo, QueueView } from '../../src/core/policy';

// The host's time per batch beyond the model's run (merge, the hop to a worker and back, settling):
// learned only from a decision that follows the end of the batch the previous one released.

describe('Handoff', () => {
  test('a batch released with nothing in flight, ended, and the decision its end allows: the gap is learned', () => {
    const h = new Handoff();
    h.decided(100, 90, 0);
    h.released(100);
    h.ended(26);
    h.decided(130, 90, 0); // a request waiting since before the release: the slot freeing made this decision
    expect(h.ms).toBe(4);
    // Later samples are smoothed (a fifth of the difference once past the first few).
    for (const gap of [4, 4, 4, 4]) {
      h.released(200);
      h.ended(26);
      h.decided(200 + 26 + gap, 150, 0);
    }
    h.released(300);
    h.ended(26);
    h.decided(300 + 26 + 9, 250, 0);
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
    h.decided(200, 150, 1); // a second slot: another batch runs beside this one
    h.released(200);
    h.ended(26);
    h.decided(240, 150, 1);
    expect(h.ms).toBe(0);
  });

  test('negative gaps (a clock read early) count as 0', () => {
    const h = new Handoff();
    h.decided(100, 90, 0);
    h.released(100);
    h.ended(26);
    h.decided(120, 90, 0);
    expect(h.ms).toBe(0);
  });
});

const req = (enqueuedAt: number, deadline = Infinity, rows = 1): QueuedRequestInfo => ({ enqueuedAt, deadline, rows, priority: 0 });
function view(now: number, reqs: QueuedRequestInfo[]): QueueView {
  return {
    now,
    queuedRows: reqs.reduce((s, r) => s + r.rows, 0),
    queuedRequests: reqs.length,
    oldestEnqueuedAt: Math.min(...reqs.map((r) => r.enqueuedAt)),
    earliestDeadline: () => Math.min(...reqs.map((r) => r.deadline)),
    inFlight: 0,
    freeSlots: 1,
    maxBatchSize: 16,
    maxDelayMs: 0,
    maxLatencyMs: 300,
    requests: () => reqs,
  };
}

test('the adaptive policy counts the learned handoff in every batch it chains for an arrival', () => {
  const p = new AdaptivePolicy();
  for (const rows of [1, 4, 16]) p.observe({ rows, requests: rows, runMs: 10 + rows, ok: true }); // a full batch of 16: 26 ms
  const full = p.latencyModel.predict(16) as number;
  const waiting = Array.from({ length: 40 }, () => req(90));
  expect(p.decide(view(100, waiting))).toMatchObject({ release: true, maxRows: 16 });
  p.observe({ rows: 16, requests: 16, runMs: 26, ok: true });
  // The batch's end allowed the next decision 6 ms after the model finished: the handoff.
  expect(p.decide(view(132, waiting.slice(16)))).toMatchObject({ release: true, maxRows: 16 });
  // An arrival behind 40 rows (two full batches, then its own), the batch released at 132 running:
  // on the model's run times alone it ends at 132 + 4 × full, in time for a due time 10 ms later;
  // with 6 ms a batch it ends 24 ms later: a certain miss.
  // (Judged in that order: a certain miss starts the overload, and then 40 rows are over its cap.)
  expect(p.enqueued(req(140, 132 + 4 * (full + 6) + 1), 40, 1)).toBe(true);
  expect(p.enqueued(req(140, 132 + 4 * full + 10), 40, 1)).toBe(false);
  expect(p.stats.refusedCertainMiss).toBe(1);
});
