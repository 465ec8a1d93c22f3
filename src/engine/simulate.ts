/**
 * A discrete-event simulation of a host under Poisson load, on a {@link ManualClock}: arrivals come
 * from a seeded RNG, the model's run time is `a + b·rows` (a clock timer), or a recorded machine's
 * (`cost`), and nothing real waits. The host and its policies are the real code; only the clock
 * is simulated. Used by `microbatch bench` to predict each setting's latency from measured run
 * times, and by the simulation tests, the script that draws `docs/adaptive-latency-vs-load.svg`
 * and the adaptive benchmark's replay.
 */
import { ModelHost } from './model-host';
import { AdaptivePolicy, type AdaptivePolicyOptions, type AdaptiveStats } from '../core/adaptive-policy';
import type { LatencyModelState } from '../core/latency-model';
import { ManualClock } from '../core/manual-clock';

/** A linear-cost model and the host limits it runs under. */
export interface SimModel {
  /** Fixed cost per batch in ms. */
  readonly a: number;
  /** Cost per row in ms. */
  readonly b: number;
  readonly maxBatchSize: number;
  /** Latency budget (the SLO) in ms. */
  readonly maxLatencyMs: number;
  /**
   * Slow spells, as a shared VM has them: spells start as a Poisson process (one every `everyMs`
   * on average, seeded) and last `lengthMs`; a batch that starts in one costs `factor` times as
   * much. Without it the model is deterministic.
   */
  readonly spells?: { readonly everyMs: number; readonly lengthMs: number; readonly factor: number; readonly seed?: number };
  /**
   * Jitter from batch to batch: each run time is multiplied by a seeded lognormal factor with mean
   * 1 and this coefficient of variation. Without it (0) the model is deterministic between spells.
   */
  readonly jitterCv?: number;
  /**
   * The seed of the jitter's factors. Runs meant as independent samples (a benchmark's seeds) give
   * each its own: with one sequence for all, every run's first batches draw the same factors, and a
   * policy's first read of the model's speed is one draw repeated (the first six of the default
   * sequence read a 10 + 0.1·n ms model 8% fast).
   * @default 4242
   */
  readonly jitterSeed?: number;
  /**
   * The run time in ms of a batch of `rows` rows that starts at `atMs` on the simulated clock, in
   * place of `a + b·rows` with spells and jitter: the benchmark replays a real model's measured
   * run times through it, so that every setting meets the same machine.
   */
  readonly cost?: (rows: number, atMs: number) => number;
  /** The host's `timeoutMs` for every request. @default none */
  readonly timeoutMs?: number;
  /**
   * A batch holds the event loop while it runs, as an inline `session.run` does: requests that
   * arrive meanwhile reach the host only when it ends (queued just before the batch settles, so the
   * next decision sees them, as the host's wait for the timers phase arranges), their latency
   * still counted from their arrival. Without it requests are queued as they arrive.
   * @default false
   */
  readonly blocking?: boolean;
}

/** Outcomes by send time, one entry per bin (see {@link SimResult.timeline}). */
export interface SimTimeline {
  readonly onTime: number[];
  readonly late: number[];
  readonly refused: number[];
}

/** One configuration to simulate. */
export type SimPolicy = { readonly kind: 'fixed'; readonly maxDelayMs: number; readonly maxQueueSize?: number } | { readonly kind: 'adaptive'; readonly options?: AdaptivePolicyOptions };

export interface SimResult {
  readonly answered: number;
  /** Every answered request's latency in ms, ascending. */
  readonly latencies: readonly number[];
  readonly shed: number;
  /** How long each refused request (shed, queue full or timed out) waited for its refusal, in ms. */
  readonly refusals: readonly number[];
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly meanBatch: number;
  /** Answered requests slower than the SLO. */
  readonly overSlo: number;
  /** Answered requests slower than the SLO among those sent at or after `t` ms. */
  overSloSentFrom(t: number): number;
  /** Requests answered within the SLO among those sent at or after `t` ms (goodput after an onset). */
  onTimeSentFrom(t: number): number;
  /**
   * Every request's outcome counted by when it was sent, in bins of `binMs` from 0: answered in
   * time, answered late, refused (shed, queue full or timed out). Shows where goodput goes over a
   * run, e.g. the onset of an overload against its steady state.
   */
  timeline(binMs: number): SimTimeline;
  /** `host.stats.rejected.deadline` at the end. */
  readonly rejectedDeadline: number;
  /** The adaptive policy's own counters and learned model (adaptive runs only). */
  readonly adaptive?: { readonly stats: AdaptiveStats; readonly model: LatencyModelState };
}

/** Mulberry32: a tiny seeded PRNG, so every run sees the same arrivals. */
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

/** Poisson arrival times (ms) at `rate` requests per ms. */
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

/** Requests per ms that `load` (0..1) of the model's full-batch throughput means. */
export function rateForLoad(m: SimModel, load: number): number {
  return (load * m.maxBatchSize) / (m.a + m.b * m.maxBatchSize);
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

/**
 * The model's cost factor at time `t`: `spells.factor` inside a slow spell, else 1. Times are asked
 * in order (the simulation's clock only moves forward), so only the latest spell start matters: an
 * earlier one that does not cover `t` ends before the latest one would.
 */
function spellFactor(m: SimModel): (t: number) => number {
  const sp = m.spells;
  if (sp === undefined) return () => 1;
  const next = rng(sp.seed ?? 99);
  const gap = (): number => -Math.log(1 - next()) * sp.everyMs;
  let start = -Infinity;
  let upcoming = gap();
  return (t) => {
    while (upcoming <= t) {
      start = upcoming;
      upcoming += gap();
    }
    return t - start < sp.lengthMs ? sp.factor : 1;
  };
}

/** The model's jitter factors, one per batch, in order (always 1 without `jitterCv`). */
function jitter(m: SimModel): () => number {
  const cv = m.jitterCv ?? 0;
  if (cv === 0) return () => 1;
  const next = rng(m.jitterSeed ?? 4242);
  const sigma = Math.sqrt(Math.log(1 + cv * cv));
  return () => {
    // Box–Muller; the -σ²/2 shift makes the factor's mean 1.
    const z = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    return Math.exp(sigma * z - (sigma * sigma) / 2);
  };
}

/** Runs one configuration over the given arrival times and reports latency and shedding. */
export async function simulate(m: SimModel, policy: SimPolicy, arrivals: readonly number[]): Promise<SimResult> {
  const clock = new ManualClock();
  const adaptive = policy.kind === 'adaptive' ? new AdaptivePolicy(policy.options) : undefined;
  const factorAt = spellFactor(m);
  const jitterOf = jitter(m);
  const cost = m.cost ?? ((rows: number, at: number): number => (m.a + m.b * rows) * factorAt(at) * jitterOf());
  const latencies: number[] = [];
  const answers: Array<{ sent: number; latency: number }> = [];
  let shed = 0;
  const refusals: number[] = [];
  const refusedSent: number[] = [];
  let i = 0;
  let running = 0;
  const send = (sent: number): void => {
    host.inference(i++).then(
      () => {
        latencies.push(clock.now() - sent);
        answers.push({ sent, latency: clock.now() - sent });
      },
      () => {
        shed++;
        refusals.push(clock.now() - sent);
        refusedSent.push(sent);
      },
    );
  };
  const fn = (items: readonly number[]): Promise<number[]> => {
    running++;
    return new Promise((resolve) =>
      clock.setTimer(() => {
        running--;
        // The loop is free again: what arrived while the batch held it reaches the host now.
        if (m.blocking === true) while (i < arrivals.length && (arrivals[i] as number) <= clock.now()) send(arrivals[i] as number);
        resolve([...items]);
      }, cost(items.length, clock.now())),
    );
  };
  const host = new ModelHost(fn, {
    maxBatchSize: m.maxBatchSize,
    clock,
    ...(m.timeoutMs === undefined ? {} : { timeoutMs: m.timeoutMs }),
    ...(policy.kind === 'fixed' ? { maxDelayMs: policy.maxDelayMs, ...(policy.maxQueueSize === undefined ? {} : { maxQueueSize: policy.maxQueueSize }) } : { maxLatencyMs: m.maxLatencyMs, policy: adaptive }),
  });
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
  while (i < arrivals.length || host.stats.queued + host.stats.running > 0) {
    const nextArrival = i < arrivals.length && !(m.blocking === true && running > 0) ? (arrivals[i] as number) : Infinity;
    const nextTimer = clock.nextTimerAt ?? Infinity;
    const t = Math.min(nextArrival, nextTimer);
    if (t === Infinity) break;
    clock.advance(Math.max(0, t - clock.now()));
    if (nextArrival <= nextTimer) send(clock.now());
    await tick();
  }
  await host.stop();
  latencies.sort((x, y) => x - y);
  const stats = host.stats;
  const slo = m.maxLatencyMs + 1e-9;
  return {
    answered: latencies.length,
    latencies,
    shed,
    refusals,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies.at(-1) ?? NaN,
    meanBatch: stats.meanBatchSize,
    overSlo: latencies.filter((l) => l > slo).length,
    overSloSentFrom: (t) => answers.filter((a) => a.sent >= t && a.latency > slo).length,
    onTimeSentFrom: (t) => answers.filter((a) => a.sent >= t && a.latency <= slo).length,
    timeline: (binMs) => {
      const bins = Math.max(1, Math.ceil(((arrivals.at(-1) ?? 0) + 1e-9) / binMs));
      const out: SimTimeline = { onTime: new Array<number>(bins).fill(0), late: new Array<number>(bins).fill(0), refused: new Array<number>(bins).fill(0) };
      const count = (into: number[], sent: number): void => {
        const k = Math.min(bins - 1, Math.floor(sent / binMs));
        into[k] = (into[k] as number) + 1;
      };
      for (const a of answers) count(a.latency <= slo ? out.onTime : out.late, a.sent);
      for (const sent of refusedSent) count(out.refused, sent);
      return out;
    },
    rejectedDeadline: stats.rejected.deadline,
    ...(adaptive === undefined ? {} : { adaptive: { stats: adaptive.stats, model: adaptive.latencyModel.toJSON() } }),
  };
}
