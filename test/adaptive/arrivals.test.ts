import { Arrivals } from '../../src/core/adaptive-arrivals';

describe('Arrivals: the overload window', () => {
  test('counts the rows of the last overloadMs, to within a 64th of it, and forgets older ones', () => {
    const a = new Arrivals(32, 1000);
    for (let t = 0; t < 1000; t += 10) a.record(t, 2); // 100 arrivals, 200 rows
    a.forget(999);
    expect(a.recentRows).toBe(200);
    // At 1500 the arrivals before 500 are out, and the bucket holding 500 (500–515.6) goes whole:
    // 500 and 510 with it, so the window is counted short by under a bucket.
    a.forget(1500);
    expect(a.recentRows).toBeGreaterThanOrEqual(2 * 48);
    expect(a.recentRows).toBeLessThanOrEqual(2 * 50);
    a.forget(2000);
    expect(a.recentRows).toBe(0);
    expect(a.first).toBe(0);
  });

  test('an arrival after a gap longer than the window starts it afresh; rows of several requests add up', () => {
    const a = new Arrivals(32, 100);
    a.record(0, 5);
    a.record(50, 3);
    a.record(10_000, 4); // the slots of the old buckets are reused
    a.forget(10_000);
    expect(a.recentRows).toBe(4);
    a.record(10_001, 16);
    expect(a.recentRows).toBe(20);
  });

  test('with overloadMs 0 only the arrivals of the same instant count', () => {
    const a = new Arrivals(32, 0);
    a.record(5, 1);
    a.record(5, 2);
    a.forget(5);
    expect(a.recentRows).toBe(3);
    a.forget(6);
    expect(a.recentRows).toBe(0);
  });

  test('the recent rate counts the whole buckets covering the last ms up to now, and falls when arrivals slow', () => {
    const a = new Arrivals(32, 1000);
    expect(a.recentRate(10, 100)).toBe(0); // nothing arrived yet
    for (let t = 0; t < 1000; t += 0.5) a.record(t, 1); // 2 rows/ms
    expect(a.recentRate(1000, 100)).toBeCloseTo(2, 1);
    expect(a.recentRate(1000, 1000)).toBeCloseTo(2, 2);
    for (let t = 1000; t < 1200; t += 1) a.record(t, 1); // then 1 row/ms
    expect(a.recentRate(1200, 100)).toBeCloseTo(1, 1);
    // The whole window still holds 800 ms at 2 rows/ms: the rate over it has barely moved.
    expect(a.recentRate(1200, 1000)).toBeGreaterThan(1.7);
    // A window longer than overloadMs reads the overload window.
    expect(a.recentRate(1200, 5000)).toBeCloseTo(a.recentRate(1200, 1000), 6);
    expect(a.recentRate(1200, Infinity)).toBeCloseTo(a.recentRate(1200, 1000), 6); // no budget: the whole window
    // Quiet since: the rate decays, measured up to now.
    expect(a.recentRate(1300, 100)).toBe(0);
  });

  test('the rate is rows per ms over the remembered arrivals, measured up to now', () => {
    const a = new Arrivals(4, 1000);
    expect(a.rate(10)).toBe(0);
    for (const t of [0, 1, 2, 3, 4, 5]) a.record(t, 1); // only the last 4 are remembered: 2..5
    expect(a.rate(5)).toBeCloseTo(3 / 3);
    expect(a.rate(8)).toBeCloseTo(3 / 6); // decays during a quiet spell
  });
});
