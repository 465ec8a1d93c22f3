import { recommend } from '../../src/cli/recommend';

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

test('no timings is an error', () => {
  expect(() => recommend([])).toThrow(/no timings/);
});
