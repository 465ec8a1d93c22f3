import { MachineTimeline, RunRecorder } from '../../bench/replay';
import { simulate } from './simulation';

describe('the machine timeline the adaptive bench replays', () => {
  test('a factor holds from its batch start to the next one, runs are laid end to end, and time wraps around', () => {
    const quiet = (rows: number): number => rows; // 1 ms a row when quiet
    const first = new RunRecorder(1000, quiet);
    first.batch(1000, 2, 2); // factor 1 from 0
    first.batch(1010, 4, 12); // factor 3 from 10
    const second = new RunRecorder(5000, quiet);
    second.batch(5005, 1, 2); // factor 2 from 5 of the second run
    const t = new MachineTimeline();
    expect(t.factorAt(3)).toBe(1); // nothing recorded: the quiet machine
    t.append({ ...first, lengthMs: 20 });
    t.append({ ...second, lengthMs: 30 });
    expect([t.length, t.samples]).toEqual([50, 3]);
    expect([0, 9.9, 10, 24.9, 25, 49].map((x) => t.factorAt(x))).toEqual([1, 1, 3, 3, 2, 2]);
    expect([50, 60, 75].map((x) => t.factorAt(x))).toEqual([1, 3, 2]);
    expect(t.medianFactor()).toBe(2);
  });

  test('a run before its first batch takes that batch factor', () => {
    const rec = new RunRecorder(0, () => 2);
    rec.batch(4, 1, 5);
    const t = new MachineTimeline();
    t.append({ ...rec, lengthMs: 10 });
    expect(t.factorAt(1)).toBe(2.5);
  });

  test('replayed, every setting meets the same slow spell: a batch costs the quiet time times the factor at its start', async () => {
    const t = new MachineTimeline();
    // Quiet for 100 ms, then 4x slower for 100 ms.
    t.append({ at: [0, 100], factor: [1, 4], lengthMs: 200 });
    const model = { a: 0, b: 0, maxBatchSize: 1, maxLatencyMs: 1000, cost: (rows: number, at: number) => 2 * rows * t.factorAt(at) };
    const r = await simulate(model, { kind: 'fixed', maxDelayMs: 0 }, [10, 150]);
    expect(r.latencies).toEqual([2, 8]);
  });

  test('a blocking batch holds arrivals until it ends: they reach the host then (their time-outs count from there), their latency from arrival', async () => {
    const model = { a: 10, b: 0, maxBatchSize: 8, maxLatencyMs: 1000, timeoutMs: 15 };
    const arrivals = [0, 1, 2, 3];
    const held = await simulate({ ...model, blocking: true }, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
    expect([held.latencies, held.shed]).toEqual([[10, 17, 18, 19], 0]);
    // Queued as they arrive, the three time out in the second batch (at 16, 17 and 18).
    const queued = await simulate(model, { kind: 'fixed', maxDelayMs: 0 }, arrivals);
    expect([queued.latencies, queued.shed]).toEqual([[10], 3]);
  });
});
