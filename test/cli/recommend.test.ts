import { recommend, recommendForLoads } from '../../src/cli/recommend';
import { costCurve } from '../../src/cli/load-simulation';
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

// The load-based recommendation: the measured costs played through the host at the loads named.

test('a classifier-like cost (1 ms + 0.5 ms/row): no window beats window 0 at 30/70/95%, so none is recommended', async () => {
  const rows = [1, 2, 4, 8, 16, 32];
  const rec = await recommendForLoads(rows.map((n) => t(n, 1 + 0.5 * n)), { requests: 1500 });
  expect(rec).toMatchObject({ maxBatchSize: 16, maxDelayMs: 0, policy: 'greedy' });
  expect(rec.predictions.map((p) => p.setting)).toEqual(['maxDelayMs 0', 'maxDelayMs 2.25', 'maxDelayMs 4.5', 'maxDelayMs 9', 'adaptive']);
  const zero = rec.predictions[0]!;
  expect(zero.byLoad.map((b) => b.load)).toEqual([0.3, 0.7, 0.95]);
  for (const p of rec.predictions.slice(1, 4)) {
    // A fixed wait costs every request up to its length at low load: p50 grows by about the wait.
    expect(p.byLoad[0]!.p50).toBeGreaterThan(zero.byLoad[0]!.p50);
  }
  expect(rec.why[1]).toMatch(/^played through the host at 30%, 70%, 95% of batch 16's throughput \(1778 items\/s\), maxDelayMs 0 has the lowest worst-case p99 \(/);
});

test('a batch of one: only window 0 and the adaptive policy are played', async () => {
  const rec = await recommendForLoads([t(1, 1), t(2, 2), t(4, 4.1)], { loads: [0.5], requests: 200 });
  expect(rec.maxBatchSize).toBe(1);
  expect(rec.predictions.map((p) => p.setting)).toEqual(['maxDelayMs 0', 'adaptive']);
});

test('loads must be positive shares, and timings must exist', async () => {
  await expect(recommendForLoads([t(1, 1)], { loads: [] })).rejects.toThrow(new RangeError('recommendForLoads: expected loads above 0, got []'));
  await expect(recommendForLoads([t(1, 1)], { loads: [0.5, -1] })).rejects.toThrow(new RangeError('recommendForLoads: expected loads above 0, got [0.5,-1]'));
  await expect(recommendForLoads([])).rejects.toThrow(new RangeError('recommend: no timings'));
});

test('costCurve: exact at measured sizes, linear between them and beyond, never below the fastest', () => {
  const c = costCurve([[1, 2], [4, 5], [8, 13]]);
  expect([c(1), c(2), c(4), c(6), c(8), c(16)]).toEqual([2, 3, 5, 9, 13, 29]);
  expect(costCurve([[4, 8]])(2)).toBe(4);
  expect(() => costCurve([])).toThrow(new RangeError('costCurve: no measured points'));
});
