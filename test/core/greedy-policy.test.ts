import { greedyPolicy, type QueueView } from '../../src/core/policy';

function view(over: Partial<QueueView> & { deadline?: number } = {}): QueueView {
  const { deadline = Infinity, ...rest } = over;
  return {
    now: 100,
    queuedRows: 1,
    queuedRequests: 1,
    oldestEnqueuedAt: 100,
    earliestDeadline: () => deadline,
    inFlight: 0,
    freeSlots: 1,
    maxBatchSize: 8,
    maxDelayMs: 0,
    maxLatencyMs: Infinity,
    requests: () => [],
    ...rest,
  };
}

describe('greedyPolicy.decide', () => {
  test('releases at once when the window is 0 (work-conserving)', () => {
    expect(greedyPolicy.decide(view())).toEqual({ release: true, maxRows: 8, reason: 'idle' });
  });

  test('releases a full batch at once even inside a window', () => {
    expect(greedyPolicy.decide(view({ queuedRows: 8, maxDelayMs: 50 }))).toEqual({ release: true, maxRows: 8, reason: 'full' });
    expect(greedyPolicy.decide(view({ queuedRows: 20, maxDelayMs: 50 }))).toMatchObject({ release: true, reason: 'full' });
  });

  test('waits until the window counted from the oldest request closes', () => {
    expect(greedyPolicy.decide(view({ maxDelayMs: 5, oldestEnqueuedAt: 98 }))).toEqual({ release: false, wakeAt: 103 });
    expect(greedyPolicy.decide(view({ maxDelayMs: 5, oldestEnqueuedAt: 95 }))).toEqual({ release: true, maxRows: 8, reason: 'timer' });
  });

  test('releases early when a queued deadline falls inside the window', () => {
    expect(greedyPolicy.decide(view({ maxDelayMs: 5, deadline: 103 }))).toEqual({ release: true, maxRows: 8, reason: 'deadline' });
    expect(greedyPolicy.decide(view({ maxDelayMs: 5, deadline: 106 }))).toEqual({ release: false, wakeAt: 105 });
  });
});
