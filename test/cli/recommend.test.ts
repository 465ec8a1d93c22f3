import { recommend } from '../../src/cli/recommend';
import { dedicatedMachineThreads, sharedMachineThreads } from '../../src/executors/worker/thread-budget';

// The bench recommendation: the smallest batch within 10% of the best cost per item, and a wait
// only when batching pays.

const t = (batchSize: number, medianMs: number) => ({ batchSize, runs: 9, medianMs });

test('per-item cost that keeps falling: the largest batch, and half its run time as maxDelayMs', () => {
  expect(recommend([t(1, 1), t(2, 1.1), t(4, 1.2), t(8, 1.4)])).toMatchObject({ maxBatchSize: 8, maxDelayMs: 0.7 });
});

test('per-item cost that flattens: the first batch within 10% of the best', () => {
  // per item: 1, 0.55, 0.3, 0.28, 0.29 → best 0.28; 0.3 ≤ 0.308, so batch 4.
  expect(recommend([t(1, 1), t(2, 1.1), t(4, 1.2), t(8, 2.24), t(16, 4.64)])).toMatchObject({ maxBatchSize: 4, maxDelayMs: 0.6 });
});

test('no gain from batching: maxDelayMs 0, said in words', () => {
  const r = recommend([t(1, 1), t(2, 2), t(4, 4.1), t(8, 8.4)]);
  expect(r).toMatchObject({ maxBatchSize: 1, maxDelayMs: 0 });
  expect(r.why.join(' ')).toMatch(/would just add latency/);
});

test('a small gain (1.12x, under the 2x rule) recommends no wait, and says why', () => {
  // per item: 1, 0.893 → batch 2 is the best, 1.12x cheaper than batch 1 (the OCR classifier case).
  const r = recommend([t(1, 1), t(2, 1.786)]);
  expect(r).toMatchObject({ maxBatchSize: 2, maxDelayMs: 0 });
  expect(r.why[1]).toBe('batching is 1.12x cheaper per item than batch 1, under the 2x a wait needs to pay (the host already batches what arrives while the model runs), so waiting for fuller batches would just add latency: maxDelayMs 0');
});

test('the shared-machine default leaves the event loop a core: workers × threads ≤ cores − 1, at least one thread', () => {
  const t = sharedMachineThreads;
  expect([t(2, 1), t(16, 1), t(16, 4), t(8, 0), t(1, 1), t(4, 8)]).toEqual([1, 15, 3, 7, 1, 1]);
});

test('the dedicated-machine preset gives the model every core', () => {
  const t = dedicatedMachineThreads;
  expect([t(2, 1), t(16, 1), t(16, 4), t(8, 0), t(1, 1), t(4, 8)]).toEqual([2, 16, 4, 8, 1, 1]);
});

test('no timings is an error', () => {
  expect(() => recommend([])).toThrow(/no timings/);
});
