import { chooseBatchSize, costCurve, predictionTable, recommend } from '../../src/cli/recommend';
import { parseLoads } from '../../src/cli/bench';
import { UsageError } from '../../src/cli/args';
import { dedicatedMachineThreads, sharedMachineThreads } from '../../src/executors/worker/thread-budget';

// The bench recommendation: the smallest batch within 10% of the best cost per item, then the
// measured run times played through the real host on a simulated clock for each candidate window
// and the adaptive policy, at the loads asked for.

const t = (batchSize: number, medianMs: number) => ({ batchSize, runs: 9, medianMs });

test('per-item cost that keeps falling: the largest batch', () => {
  expect(chooseBatchSize([t(1, 1), t(2, 1.1), t(4, 1.2), t(8, 1.4)]).batchSize).toBe(8);
});

test('per-item cost that flattens: the first batch within 10% of the best', () => {
  // per item: 1, 0.55, 0.3, 0.28, 0.29 → best 0.28; 0.3 ≤ 0.308, so batch 4.
  expect(chooseBatchSize([t(1, 1), t(2, 1.1), t(4, 1.2), t(8, 2.24), t(16, 4.64)]).batchSize).toBe(4);
});

test('the cost curve interpolates between measured sizes and extends past them', () => {
  const cost = costCurve([t(1, 1.5), t(4, 3), t(16, 9)]);
  expect([cost(1), cost(2), cost(4), cost(10), cost(16), cost(32)]).toEqual([1.5, 2, 3, 6, 9, 17]);
  expect(costCurve([t(8, 4)])(2)).toBe(1);
});

test('a model of 1 ms + 0.5 ms/row (the OCR classifier\'s shape): no wait beats the greedy host at any load, so maxDelayMs 0', async () => {
  const rec = await recommend([1, 2, 4, 8, 16, 32].map((b) => t(b, 1 + 0.5 * b)), { requests: 1500 });
  expect(rec).toMatchObject({ maxBatchSize: 16, maxDelayMs: 0, policy: 'greedy' });
  expect(rec.candidates.map((c) => c.label)).toEqual(['maxDelayMs 0', 'maxDelayMs 2.25', 'maxDelayMs 4.5', 'maxDelayMs 9', 'maxDelayMs 18', 'adaptive']);
  for (const c of rec.candidates) expect(c.predictions.map((p) => p.load)).toEqual([0.3, 0.7, 0.95]);
  // The old rule's half-a-run wait (4.5 ms) costs every request at light load: p99 well above window 0's.
  const at30 = (label: string) => rec.candidates.find((c) => c.label === label)!.predictions[0]!;
  expect(at30('maxDelayMs 4.5').p99).toBeGreaterThan(at30('maxDelayMs 0').p99 * 1.3);
  expect(rec.why[1]).toMatch(/^played through the host at 30%, 70%, 95% of its full-batch throughput \(1778 req\/s\), maxDelayMs 0 .*a wait only adds latency$/);
  const table = predictionTable(rec).split('\n');
  expect(table[0]).toMatch(/^setting\s+30%: p50 \/ p99 ms\s+70%: p50 \/ p99 ms\s+95%: p50 \/ p99 ms$/);
  expect(table).toHaveLength(1 + 6 + 1);
});

test('overload with a latency budget: the adaptive policy, which refuses what cannot make it, wins; the table counts late and shed answers', async () => {
  const rec = await recommend([1, 2, 4, 8, 16, 32].map((b) => t(b, 1 + 0.5 * b)), { loads: [1.5], maxLatencyMs: 30, requests: 1500 });
  expect(rec).toMatchObject({ policy: 'adaptive', maxDelayMs: undefined });
  const adaptive = rec.candidates.at(-1)!.predictions[0]!;
  const greedy = rec.candidates[0]!.predictions[0]!;
  expect(adaptive.shed).toBeGreaterThan(0);
  expect(greedy.shed).toBe(0);
  expect(greedy.overBudget).toBeGreaterThan(adaptive.overBudget);
  expect(predictionTable(rec).split('\n')[0]).toMatch(/150%: p50 \/ p99 ms \(late, shed\)$/);
});

test('no gain from batching: batch 1, and only maxDelayMs 0 to try', async () => {
  const rec = await recommend([t(1, 1), t(2, 2), t(4, 4.1), t(8, 8.4)], { requests: 500 });
  expect(rec).toMatchObject({ maxBatchSize: 1, maxDelayMs: 0 });
  expect(rec.candidates.map((c) => c.label)).toEqual(['maxDelayMs 0']);
});

test('--loads: percentages, checked', () => {
  expect(parseLoads('bench', '30,70,95')).toEqual([0.3, 0.7, 0.95]);
  expect(parseLoads('bench', ' 120 , 150')).toEqual([1.2, 1.5]);
  for (const bad of ['', '0', 'abc', '30,,70', '300', '-5']) {
    expect(() => parseLoads('microbatch bench', bad)).toThrow(
      new UsageError(`microbatch bench: --loads must be percentages of the full-batch throughput between 0 and 200, separated by commas (e.g. 30,70,95), got ${JSON.stringify(bad)}`),
    );
  }
});

test('the shared-machine default leaves the event loop a core: workers × threads ≤ cores − 1, at least one thread', () => {
  const t = sharedMachineThreads;
  expect([t(2, 1), t(16, 1), t(16, 4), t(8, 0), t(1, 1), t(4, 8)]).toEqual([1, 15, 3, 7, 1, 1]);
});

test('the dedicated-machine preset gives the model every core', () => {
  const t = dedicatedMachineThreads;
  expect([t(2, 1), t(16, 1), t(16, 4), t(8, 0), t(1, 1), t(4, 8)]).toEqual([2, 16, 4, 8, 1, 1]);
});

test('no timings is an error', async () => {
  await expect(recommend([])).rejects.toThrow(new RangeError('recommend: no timings'));
});
