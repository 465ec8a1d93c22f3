import { LatencyModel, type LatencyModelOptions } from '../../src/core/latency-model';

const ok = (rows: number, runMs: number) => ({ rows, requests: rows, runMs, ok: true });

describe('LatencyModel', () => {
  test('knows nothing before the first batch', () => {
    const m = new LatencyModel();
    expect(m.predict(4)).toBeUndefined();
    expect(m.upper(4)).toBeUndefined();
    expect(m.lower(4)).toBeUndefined();
    expect(m.toJSON()).toMatchObject({ samples: 0, fit: 'none', interceptMs: undefined, perRowMs: undefined, sizes: [] });
  });

  test('constant-size batches: exact at that size, proportional above, flat below (no degenerate fit)', () => {
    const m = new LatencyModel();
    for (let i = 0; i < 20; i++) m.observe(ok(8, 12));
    expect(m.fit).toBe('single-size');
    expect(m.predict(8)).toBeCloseTo(12);
    expect(m.predict(16)).toBeCloseTo(24); // t(s)·rows/s: an overestimate for any model with a fixed cost
    expect(m.predict(2)).toBeCloseTo(12); // a smaller batch is not predicted faster than what was seen
    expect(m.lower(2)).toBeCloseTo(3); // ...but it could be as fast as proportional, so shedding uses this
    expect(m.lower(16)).toBeCloseTo(12);
    expect(m.interceptMs).toBeUndefined();
    expect(m.toJSON()).toMatchObject({ samples: 20, fit: 'single-size', perRowMs: 1.5, sizes: [{ rows: 8, count: 20, meanMs: 12, stdMs: 0 }] });
  });

  test('two sizes give the line a + b·rows exactly for a noiseless model', () => {
    const m = new LatencyModel();
    const cost = (rows: number) => 4 + 0.5 * rows;
    for (const rows of [8, 8, 8, 3, 8, 8, 20]) m.observe(ok(rows, cost(rows)));
    expect(m.fit).toBe('line');
    expect(m.interceptMs).toBeCloseTo(4);
    expect(m.perRowMs).toBeCloseTo(0.5);
    expect(m.predict(32)).toBeCloseTo(20);
    expect(m.upper(32)).toBeCloseTo(20); // no spread measured: upper = mean
    expect(JSON.parse(JSON.stringify(m))).toMatchObject({ fit: 'line', samples: 7 });
  });

  test('a noisy model gets an upper estimate above its mean and a lower one below', () => {
    const m = new LatencyModel({ k: 2 });
    let s = 1;
    const noise = () => ((s = (s * 16807) % 2147483647) / 2147483647 - 0.5) * 2; // deterministic, ±1 ms
    for (let i = 0; i < 200; i++) for (const rows of [1, 4, 16]) m.observe(ok(rows, 10 + rows + noise()));
    const mean = m.predict(16)!;
    expect(mean).toBeGreaterThan(24);
    expect(mean).toBeLessThan(28);
    expect(m.upper(16)!).toBeGreaterThan(mean + 0.3);
    expect(m.lower(16)!).toBeLessThan(mean - 0.3);
    expect(m.toJSON().relativeStd).toBeGreaterThan(0);
  });

  test('one slow outlier moves the estimate by a clipped step, not by its excess', () => {
    const m = new LatencyModel();
    for (let i = 0; i < 20; i++) m.observe(ok(32, i % 2 === 0 ? 19.5 : 20.5));
    const before = m.upper(32)!;
    m.observe(ok(32, 60)); // a stretch of contention: 3× its usual time
    // Unclipped, the mean would rise by 0.2·40 = 8 ms and the spread to ~8 ms (upper ≈ 44 ms).
    expect(m.upper(32)! - before).toBeLessThan(4);
    expect(m.predict(32)!).toBeLessThan(21);
    expect(m.stdMs(32)!).toBeLessThan(2);
  });

  test('a size\'s first run time is taken at most 3× what the fit predicts: a stall does not set a new size, nor the line', () => {
    // Live: a 30 ms stall ran a wide MLP's first batch of 48 rows 24× slow, and the line read its
    // full batch at 16.2 ms for 1.4 (and refused requests at 30% load).
    const m = new LatencyModel();
    for (let i = 0; i < 10; i++) for (const rows of [1, 2, 4, 8]) m.observe(ok(rows, 0.1 + 0.02 * rows));
    const expected = m.predict(48) as number;
    expect(expected).toBeCloseTo(0.1 + 0.02 * 48);
    m.observe(ok(48, 24 * expected));
    expect(m.toJSON().sizes.find((s) => s.rows === 48)?.meanMs).toBeCloseTo(3 * expected);
    expect(m.predict(64) as number).toBeLessThan(3 * (0.1 + 0.02 * 64));
  });

  test('a size truly far slower than the line is learned from its next samples, which are averaged plainly', () => {
    const m = new LatencyModel();
    for (let i = 0; i < 10; i++) for (const rows of [1, 2, 4, 8]) m.observe(ok(rows, 0.1 + 0.02 * rows));
    const truth = 10 * (m.predict(48) as number);
    const means: number[] = [];
    for (let i = 0; i < 4; i++) {
      m.observe(ok(48, truth));
      means.push(m.toJSON().sizes.find((s) => s.rows === 48)?.meanMs as number);
    }
    expect(means[0]).toBeCloseTo(0.3 * truth); // clipped at 3× the line
    expect(means[1]).toBeCloseTo(0.65 * truth);
    expect(means[3]).toBeGreaterThan(0.8 * truth);
  });

  test('before the fit rests on six batches a first run time is taken as it came', () => {
    const m = new LatencyModel();
    m.observe(ok(1, 1));
    m.observe(ok(2, 1.1));
    m.observe(ok(32, 50)); // 3 batches learned: nothing yet to judge a first run time against
    expect(m.toJSON().sizes.find((s) => s.rows === 32)?.meanMs).toBe(50);
  });

  test('stdMs is the spread a chain of batches adds up; undefined before any data', () => {
    const m = new LatencyModel({ k: 3 });
    expect(m.stdMs(4)).toBeUndefined();
    expect(m.k).toBe(3);
    for (let i = 0; i < 10; i++) m.observe(ok(8, i % 2 === 0 ? 9 : 11));
    expect(m.stdMs(8)!).toBeGreaterThan(0.8);
    expect(m.stdMs(8)!).toBeLessThan(1.2);
    expect(m.upper(8)!).toBeCloseTo(m.predict(8)! + 3 * m.stdMs(8)!, 5);
  });

  test('follows a model that slows down (EWMA), and ignores failed batches', () => {
    const m = new LatencyModel({ alpha: 0.5 });
    for (let i = 0; i < 10; i++) m.observe(ok(4, 10));
    m.observe({ rows: 4, requests: 4, runMs: 1000, ok: false });
    expect(m.predict(4)).toBeCloseTo(10);
    for (let i = 0; i < 10; i++) m.observe(ok(4, 20));
    expect(m.predict(4)!).toBeGreaterThan(19.9);
  });

  test('noise that tilts the fit is clamped: run time never falls with rows nor goes negative', () => {
    const falling = new LatencyModel();
    falling.observe(ok(2, 10));
    falling.observe(ok(10, 9));
    expect(falling.perRowMs).toBe(0);
    expect(falling.predict(100)).toBeCloseTo(9.5);
    const steep = new LatencyModel();
    steep.observe(ok(10, 1));
    steep.observe(ok(20, 30));
    expect(steep.interceptMs).toBe(0);
    expect(steep.predict(0)).toBe(0);
    expect(steep.predict(20)!).toBeGreaterThan(0);
  });

  test('maxStdMs bounds the spread of every batch size up to its argument, and is undefined before any data', () => {
    const m = new LatencyModel();
    expect(m.maxStdMs(16)).toBeUndefined();
    // A small size that spreads widely and a large one that hardly spreads.
    for (let i = 0; i < 20; i++) {
      m.observe(ok(2, i % 2 === 0 ? 1 : 5));
      m.observe(ok(16, i % 2 === 0 ? 9.9 : 10.1));
    }
    const bound = m.maxStdMs(16)!;
    for (let rows = 1; rows <= 16; rows++) expect(bound).toBeGreaterThanOrEqual(m.stdMs(rows)!);
    expect(m.maxStdMs(1)!).toBeLessThan(bound); // sizes above the argument do not count
  });

  test('rejects nonsense options', () => {
    const cases: Array<[LatencyModelOptions, string]> = [
      [{ alpha: 0 }, 'LatencyModel: expected `alpha` to be a number > 0 and <= 1, got 0'],
      [{ alpha: 2 }, 'LatencyModel: expected `alpha` to be a number > 0 and <= 1, got 2'],
      [{ k: -1 }, 'LatencyModel: expected `k` to be a number >= 0, got -1'],
      [{ maxWeight: Number.NaN }, 'LatencyModel: expected `maxWeight` to be a number > 0, got NaN'],
    ];
    for (const [options, message] of cases) {
      expect(() => new LatencyModel(options)).toThrow(RangeError);
      expect(() => new LatencyModel(options)).toThrow(message);
    }
  });
});
