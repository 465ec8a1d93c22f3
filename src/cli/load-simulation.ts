import { AdaptivePolicy } from '../core/adaptive-policy';
import { ManualClock } from '../core/manual-clock';
import { ModelHost } from '../engine/model-host';

/**
 * Plays a load through the real host and policies on a simulated clock: Poisson arrivals from a
 * seeded generator, each batch costing what the model measured for its size, and nothing real
 * waiting. What `microbatch bench` predicts latency with. @internal
 */

/** Mulberry32: a tiny seeded PRNG, so every setting sees the same arrivals. @internal */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Poisson arrival times (ms) at `rate` requests per ms. @internal */
export function poissonArrivals(rate: number, count: number, seed: number): number[] {
  const next = rng(seed);
  const out: number[] = [];
  let t = 0;
  for (let i = 0; i < count; i++) {
    t += -Math.log(1 - next()) / rate;
    out.push(t);
  }
  return out;
}

/**
 * A batch's run time in ms by its rows, from measured `[rows, ms]` points: linear between measured
 * sizes, the nearest two points' line beyond them (never below the smallest measured time).
 * @internal
 */
export function costCurve(points: ReadonlyArray<readonly [rows: number, ms: number]>): (rows: number) => number {
  const p = [...points].sort((x, y) => x[0] - y[0]);
  if (p.length === 0) throw new RangeError('costCurve: no measured points');
  const floor = Math.min(...p.map((x) => x[1]));
  return (rows) => {
    if (p.length === 1) return ((p[0] as readonly [number, number])[1] * rows) / (p[0] as readonly [number, number])[0];
    let i = 1;
    while (i < p.length - 1 && (p[i] as readonly [number, number])[0] < rows) i++;
    const [r0, m0] = p[i - 1] as readonly [number, number];
    const [r1, m1] = p[i] as readonly [number, number];
    return Math.max(floor, m0 + ((m1 - m0) * (rows - r0)) / (r1 - r0));
  };
}

/** A setting to play: a fixed window, or the adaptive policy (with a budget, if any). @internal */
export type PlayedSetting = { readonly maxDelayMs: number } | { readonly adaptive: true; readonly maxLatencyMs?: number };

/** What one setting did under one load. @internal */
export interface PlayedLoad {
  readonly p50: number;
  readonly p99: number;
  readonly meanBatch: number;
  readonly shed: number;
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number);
}

/**
 * Runs `arrivals` (ms) through a host of `maxBatchSize` under `setting`, each batch costing
 * `cost(rows)` ms on a simulated clock; resolves with the answered requests' p50/p99 latency.
 * @internal
 */
export async function playLoad(cost: (rows: number) => number, setting: PlayedSetting, maxBatchSize: number, arrivals: readonly number[]): Promise<PlayedLoad> {
  const clock = new ManualClock();
  const latencies: number[] = [];
  let shed = 0;
  const fn = (items: readonly number[]): Promise<number[]> => new Promise((resolve) => clock.setTimer(() => resolve([...items]), cost(items.length)));
  const host = new ModelHost(fn, {
    maxBatchSize,
    clock,
    ...('adaptive' in setting ? { policy: new AdaptivePolicy(), ...(setting.maxLatencyMs === undefined ? {} : { maxLatencyMs: setting.maxLatencyMs }) } : { maxDelayMs: setting.maxDelayMs }),
  });
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
  let i = 0;
  while (i < arrivals.length || host.stats.queued + host.stats.running > 0) {
    const nextArrival = i < arrivals.length ? (arrivals[i] as number) : Infinity;
    const nextTimer = clock.nextTimerAt ?? Infinity;
    const t = Math.min(nextArrival, nextTimer);
    if (t === Infinity) break;
    clock.advance(Math.max(0, t - clock.now()));
    if (nextArrival <= nextTimer) {
      const sent = clock.now();
      host.inference(i++).then(
        () => latencies.push(clock.now() - sent),
        () => shed++,
      );
    }
    await tick();
  }
  await host.stop();
  latencies.sort((x, y) => x - y);
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), meanBatch: host.stats.meanBatchSize, shed };
}
