/**
 * Scenario: is the adaptive policy ever worse than the best fixed window? Open-loop Poisson
 * arrivals at 30 %, 70 % and 95 % of measured capacity, on two models with different cost curves
 * (the PaddleOCR classifier, where batching gains ~2×, and a wide generated MLP where the fixed
 * cost dominates and batching gains ~5×), inline. Settings: greedy with `maxDelayMs` ∈ {0, 2, 5,
 * 10}, `policy: 'adaptive'` with `maxLatencyMs: 100`, and window 0 a second time as an A/A
 * control. Every repetition runs all settings of a load on the same seeded arrivals, in rotating
 * order, at a rate set from the capacity measured just before it.
 *
 * The measure: each setting's p99 over every answered request of all its repetitions (pooled),
 * and its misses, requests shed or answered later than the 100 ms budget (what a caller with
 * that budget counts as failed, whichever way it failed). Target: adaptive's p99 ≤ 1.1× the best
 * window's, with no more misses. The median of the per-run p99s and the paired ratio are printed
 * too.
 *
 * Live and replayed. Live runs are the real thing, but on this machine they cannot resolve 1.1×:
 * the A/A control (window 0 twice) read 0.19–5.79× at 70–95% load, because a slow spell of the VM
 * that falls in one setting's 2 s run decides its tail. So every batch of a repetition's live runs
 * is recorded as the machine's slowness at that moment (run time over the quiet run time for its
 * size, see replay.ts), and every setting is then replayed over that same timeline: the real host
 * and policies on a simulated clock, arrivals at the live rate, batches costing the quiet time
 * times the recorded slowness. The A/A control reads 1.00× there by construction, and the targets
 * are judged on the replay; the live ratio and its A/A control stand beside each target, so a
 * replay that flattered the policy would show. Like the live runs, a replayed batch holds the
 * event loop (requests arriving meanwhile reach the host when it ends). What the replay leaves
 * out: the host's own CPU time (a decision of a few µs, a shed of 2.5 µs).
 *
 * Quiet live runs only: this machine has spells where the model runs 2–3× slower. A run is
 * measured against the model's quiet run time per batch size (calibrated at the start) and re-run,
 * up to `RETRIES` times, when more than `SLOW_SHARE` of its batches ran over twice that time (+1
 * ms). Every setting gets the same rule; the tables report how many runs were re-run.
 *
 *   npx ts-node bench/adaptive.ts --quick
 */
import { performance } from 'node:perf_hooks';
import { ModelHost } from '../src/engine/model-host';
import {
  closedLoop,
  fmt,
  main,
  median,
  openLoop,
  percentile,
  pick,
  poissonSchedule,
  Progress,
  ratio,
  report,
  table,
  writeResults,
  type TargetResult,
} from './harness';
import { concatBatchFn, loadCls, loadWideMlp, type BenchModel } from './models';
import { MachineTimeline, RunRecorder } from './replay';
import { simulate, type SimPolicy } from '../test/adaptive/simulation';

const FIXED = [0, 2, 5, 10] as const;
const fixedLabel = (d: number): string => `greedy, maxDelayMs ${d}`;
/** The latency budget of the comparison: adaptive's `maxLatencyMs`, and what counts as late for every setting. */
const BUDGET_MS = 100;
const ADAPTIVE = `adaptive, maxLatencyMs ${BUDGET_MS}`;
/**
 * Window 0 a second time, under its own label: an A/A control. It is never a candidate for the
 * best window; its ratio to window 0 is what the measure reads between two identical settings,
 * i.e. the resolution of this run.
 */
const CONTROL = `${fixedLabel(0)} (A/A control)`;
const SETTINGS = [
  ...FIXED.map((d) => ({ label: fixedLabel(d), options: { maxDelayMs: d } as const, sim: { kind: 'fixed', maxDelayMs: d } as SimPolicy })),
  { label: ADAPTIVE, options: { policy: 'adaptive', maxLatencyMs: BUDGET_MS } as const, sim: { kind: 'adaptive' } as SimPolicy },
  { label: CONTROL, options: { maxDelayMs: 0 } as const, sim: { kind: 'fixed', maxDelayMs: 0 } as SimPolicy },
];
const LOADS = [0.3, 0.7, 0.95];
const TIMEOUT_MS = 1000;
const RETRIES = 3;
const SLOW_SHARE = 0.005;

/**
 * The model's quiet run time per batch size (the batch function as the hosts run it): the 25th
 * percentile of 15 runs at each power of two up to maxBatchSize, interpolated between them.
 */
async function calibrate(m: BenchModel, item: (i: number) => Float32Array): Promise<(rows: number) => number> {
  const fn = concatBatchFn(m);
  const sizes: number[] = [];
  for (let s = 1; s < m.maxBatchSize; s *= 2) sizes.push(s);
  sizes.push(m.maxBatchSize);
  const times: number[] = [];
  for (const s of sizes) {
    const items = Array.from({ length: s }, (_, i) => item(i));
    const ts: number[] = [];
    for (let r = 0; r < 15; r++) {
      const t0 = performance.now();
      await fn(items);
      ts.push(performance.now() - t0);
    }
    ts.sort((a, b) => a - b);
    times.push(ts[Math.floor(ts.length / 4)] as number);
  }
  return (rows) => {
    let i = 0;
    while (i < sizes.length - 1 && (sizes[i + 1] as number) < rows) i++;
    const s0 = sizes[i] as number;
    const s1 = sizes[Math.min(i + 1, sizes.length - 1)] as number;
    const t0 = times[i] as number;
    const t1 = times[Math.min(i + 1, sizes.length - 1)] as number;
    return s1 === s0 ? t0 : t0 + ((t1 - t0) * (rows - s0)) / (s1 - s0);
  };
}

/** p99 over the answered requests of every run of a cell together. */
function pooledP99(runs: ReadonlyArray<ArrayLike<number>>): number {
  const all: number[] = [];
  for (const r of runs) for (let i = 0; i < r.length; i++) all.push(r[i] as number);
  return percentile(all, 99);
}

function sum(values: readonly number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return s;
}

interface Cell {
  readonly p99: number[];
  readonly shed: number[];
  /** Per run: requests answered later than BUDGET_MS after their scheduled arrival. */
  readonly late: number[];
  readonly batch: number[];
  /** Every answered latency of the cell's runs (kept out of the results file). */
  readonly latencies: Array<ArrayLike<number>>;
  /** Runs of this cell re-run because the machine was in a slow spell (live runs only). */
  reruns: number;
  /** Runs kept although still disturbed after RETRIES re-runs (live runs only). */
  disturbed: number;
}

/** The cells of one way of running (live or replayed), by load and setting. */
class Cells {
  readonly #cells = new Map<string, Cell>();
  /** Pooled p99 per cell, computed once (pooling sorts up to ~1.4 M latencies) and dropped when a run is added. */
  readonly #pooled = new Map<Cell, number>();

  get(load: number, label: string): Cell {
    const key = `${load}|${label}`;
    let cell = this.#cells.get(key);
    if (cell === undefined) {
      cell = { p99: [], shed: [], late: [], batch: [], latencies: [], reruns: 0, disturbed: 0 };
      this.#cells.set(key, cell);
    }
    return cell;
  }

  /** Adds one run: its answered latencies, its shed count and its mean batch. */
  add(load: number, label: string, latencies: ArrayLike<number>, shed: number, meanBatch: number): void {
    const cell = this.get(load, label);
    let late = 0;
    for (let i = 0; i < latencies.length; i++) if ((latencies[i] as number) > BUDGET_MS) late++;
    cell.p99.push(percentile(latencies, 99));
    cell.shed.push(shed);
    cell.late.push(late);
    cell.batch.push(meanBatch);
    cell.latencies.push(latencies);
    this.#pooled.delete(cell);
  }

  p99(load: number, label: string): number {
    const cell = this.get(load, label);
    let p = this.#pooled.get(cell);
    if (p === undefined) {
      p = pooledP99(cell.latencies);
      this.#pooled.set(cell, p);
    }
    return p;
  }

  misses(load: number, label: string): number {
    const c = this.get(load, label);
    return sum(c.shed) + sum(c.late);
  }

  /** Adaptive against the best fixed window of a load, with the A/A control's reading. */
  verdict(load: number): Verdict {
    const fixed = FIXED.map((d) => ({ d, label: fixedLabel(d), p99: this.p99(load, fixedLabel(d)) }));
    const best = fixed.reduce((a, b) => (b.p99 < a.p99 ? b : a));
    const ad = this.get(load, ADAPTIVE);
    const adP99 = this.p99(load, ADAPTIVE);
    const bestCell = this.get(load, best.label);
    return {
      bestDelayMs: best.d,
      bestLabel: best.label,
      bestP99: best.p99,
      bestMisses: this.misses(load, best.label),
      adaptiveP99: adP99,
      adaptiveMisses: this.misses(load, ADAPTIVE),
      ratio: ratio(adP99, best.p99),
      control: ratio(this.p99(load, CONTROL), this.p99(load, fixedLabel(0))),
      ofMedians: ratio(median(ad.p99), median(bestCell.p99)),
      paired: median(ad.p99.map((p, i) => p / (bestCell.p99[i] as number))),
    };
  }

  /** The table rows of a load: every setting, with the verdict beside adaptive and the control. */
  rows(load: number, live: boolean): string[][] {
    const v = this.verdict(load);
    return SETTINGS.map((s) => {
      const c = this.get(load, s.label);
      return [
        `${Math.round(load * 100)}%`,
        s.label,
        fmt(this.p99(load, s.label), 2),
        fmt(median(c.p99), 2),
        `${fmt(Math.min(...c.p99), 1)} – ${fmt(Math.max(...c.p99), 1)}`,
        fmt(median(c.batch), 1),
        `${this.misses(load, s.label)} (${sum(c.shed)} shed)`,
        ...(live ? [`${c.reruns}${c.disturbed > 0 ? ` (${c.disturbed} kept)` : ''}`] : []),
        s.label === ADAPTIVE
          ? `**${fmt(v.ratio, 2)}×** best (${v.bestDelayMs} ms); of medians ${fmt(v.ofMedians, 2)}×, paired ${fmt(v.paired, 2)}×`
          : s.label === CONTROL
            ? `A/A: ${fmt(v.control, 2)}× window 0`
            : '',
      ];
    });
  }

  /** What the results file keeps of a load (no latencies). */
  toJSON(load: number): Record<string, unknown> {
    return {
      ...this.verdict(load),
      pooledP99: Object.fromEntries(SETTINGS.map((s) => [s.label, this.p99(load, s.label)])),
      cells: Object.fromEntries(
        SETTINGS.map((s) => {
          const { latencies: _omitted, ...kept } = this.get(load, s.label);
          return [s.label, kept];
        }),
      ),
    };
  }
}

interface Verdict {
  readonly bestDelayMs: number;
  readonly bestLabel: string;
  readonly bestP99: number;
  readonly bestMisses: number;
  readonly adaptiveP99: number;
  readonly adaptiveMisses: number;
  /** Adaptive's pooled p99 over the best window's. */
  readonly ratio: number;
  /** The A/A copy's pooled p99 over window 0's: what the measure reads between identical settings. */
  readonly control: number;
  readonly ofMedians: number;
  readonly paired: number;
}

main(async (args) => {
  const progress = new Progress('adaptive', args.progress);
  // p99 of one short run swings with the machine (stretches where a batch takes 2–3× its usual
  // time): medians over repetitions, alternating settings, are what can be compared.
  const reps = args.reps ?? pick(args, 3, 7);
  const durationMs = pick(args, 1000, 2000);
  const models: BenchModel[] = [await loadCls(), await loadWideMlp()];
  const targets: TargetResult[] = [];
  const sections: Array<{ heading?: string; text: string }> = [];
  const data: Record<string, unknown> = {};

  for (const m of models) {
    const item = (i: number): Float32Array => m.items[i % m.items.length] as Float32Array;
    const measureCapacity = async (durationMs: number): Promise<number> => {
      const host = new ModelHost(concatBatchFn(m), { maxBatchSize: m.maxBatchSize });
      const res = await closedLoop({ clients: 4 * m.maxBatchSize, durationMs, call: (i) => host.inference(item(i)) });
      await host.stop();
      return res.throughput;
    };
    const caps: number[] = [];
    for (let r = 0; r < 5; r++) {
      progress.update(`${m.name} capacity ${r === 0 ? 'warm-up' : `rep ${r}/4`}`, true);
      const c = await measureCapacity(1000);
      if (r > 0) caps.push(c);
    }
    // The quiet machine's capacity: a slow spell only ever lowers a measurement.
    const capacity = Math.max(...caps);
    /** The capacity each repetition's load was set from (see below). */
    const repCapacities: number[] = [];
    /** The median slowness of each repetition's recorded timeline (1 is the quiet machine). */
    const repSlowness: number[] = [];
    progress.update(`${m.name} calibrating run times`, true);
    const quietMs = await calibrate(m, item);
    const live = new Cells();
    const replayed = new Cells();
    for (const [li, load] of LOADS.entries()) {
      for (let rep = 0; rep < reps; rep++) {
        // The load is set from the capacity measured right before the repetition (best of two
        // short closed-loop runs), not once at the start: this machine's capacity drifts by up to
        // 30% within an hour (12,900–19,000 items/s on the MLP in one session), and a "95%" load
        // set from a start-of-run figure is then an overload for every setting in some
        // repetitions and 75% in others, and those repetitions decide every setting's tail.
        progress.update(`${m.name} load ${Math.round(load * 100)}% rep ${rep + 1}/${reps}: capacity`, true);
        const repCapacity = Math.max(await measureCapacity(600), await measureCapacity(600));
        repCapacities.push(repCapacity);
        const seed = 7000 + li * 100 + rep;
        const schedule = poissonSchedule(repCapacity * load, durationMs, seed);
        const timeline = new MachineTimeline();
        for (let k = 0; k < SETTINGS.length; k++) {
          const s = SETTINGS[(k + rep + li) % SETTINGS.length] as (typeof SETTINGS)[number];
          const cell = live.get(load, s.label);
          let res: Awaited<ReturnType<typeof openLoop>>;
          let st: ModelHost<Float32Array, Float32Array>['stats'];
          let recorder: RunRecorder;
          let lengthMs: number;
          for (let attempt = 0; ; attempt++) {
            progress.update(`${m.name} load ${Math.round(load * 100)}% rep ${rep + 1}/${reps} ${s.label}${attempt > 0 ? ` (re-run ${attempt})` : ''}`, true);
            let batches = 0;
            let slow = 0;
            const start = performance.now();
            const rec = new RunRecorder(start, quietMs);
            const host = new ModelHost(concatBatchFn(m), {
              maxBatchSize: m.maxBatchSize,
              timeoutMs: TIMEOUT_MS,
              ...s.options,
              observer: {
                onBatch: (e) => {
                  batches++;
                  if (e.runMs > 2 * quietMs(e.rows) + 1) slow++;
                  rec.batch(e.startedAt, e.rows, e.runMs);
                },
              },
            });
            res = await openLoop(schedule, (i) => host.inference(item(i)));
            st = host.stats;
            await host.stop();
            recorder = rec;
            lengthMs = performance.now() - start;
            if (slow <= Math.max(1, SLOW_SHARE * batches)) break;
            if (attempt === RETRIES) {
              cell.disturbed++;
              break;
            }
            cell.reruns++;
          }
          live.add(load, s.label, res.latencies, st.rejected.deadline + st.rejected.queueFull, st.meanBatchSize);
          timeline.append({ at: recorder.at, factor: recorder.factor, lengthMs });
        }
        // The replay: every setting over the machine all of this repetition's live runs met, on
        // arrivals at the same rate for the timeline's whole length.
        progress.update(`${m.name} load ${Math.round(load * 100)}% rep ${rep + 1}/${reps}: replay`, true);
        repSlowness.push(timeline.medianFactor());
        const arrivals = Array.from(poissonSchedule(repCapacity * load, timeline.length, seed));
        // Blocking: the live runs are inline, where a batch holds the event loop and arrivals reach
        // the host only when it ends.
        const sim = {
          a: 0,
          b: 0,
          maxBatchSize: m.maxBatchSize,
          maxLatencyMs: BUDGET_MS,
          timeoutMs: TIMEOUT_MS,
          blocking: true,
          cost: (rows: number, at: number) => quietMs(rows) * timeline.factorAt(at),
        };
        for (const s of SETTINGS) {
          const r = await simulate(sim, s.sim, arrivals);
          replayed.add(load, s.label, r.latencies, r.shed, r.meanBatch);
        }
      }
    }
    const liveRows: string[][] = [];
    const replayRows: string[][] = [];
    const perLoad: Record<string, unknown> = {};
    for (const load of LOADS) {
      liveRows.push(...live.rows(load, true));
      replayRows.push(...replayed.rows(load, false));
      const v = replayed.verdict(load);
      const l = live.verdict(load);
      targets.push({
        name:
          `${m.name} ${Math.round(load * 100)}%: adaptive p99 / best fixed window, replayed (no more missed; ` +
          `live ${fmt(l.ratio, 2)}× with A/A control ${fmt(l.control, 2)}×)`,
        value: v.ratio,
        target: '≤ 1.1',
        pass: v.ratio <= 1.1 && v.adaptiveMisses <= v.bestMisses,
      });
      perLoad[String(load)] = { live: live.toJSON(load), replay: replayed.toJSON(load) };
    }
    const columns = ['load', 'setting', 'p99 ms (pooled)', 'p99 ms (median of runs)', 'p99 range (runs)', 'mean batch', `missed: shed or > ${BUDGET_MS} ms`];
    sections.push({
      heading: `${m.name}, live: capacity ${fmt(capacity, 0)} items/s at the start, ${fmt(Math.min(...repCapacities), 0)} – ${fmt(Math.max(...repCapacities), 0)} before the repetitions, maxBatchSize ${m.maxBatchSize}`,
      text: table([...columns, 're-runs (slow spells)', 'adaptive vs best window (pooled p99)'], liveRows),
    });
    sections.push({
      heading: `${m.name}, replayed: every setting on the machine timeline of each repetition's live runs (median slowness ${fmt(Math.min(...repSlowness), 2)} – ${fmt(Math.max(...repSlowness), 2)}× the quiet run time)`,
      text: table([...columns, 'adaptive vs best window (pooled p99)'], replayRows),
    });
    data[m.name] = {
      capacity,
      capacityReps: caps,
      repCapacities,
      repSlowness,
      quietRunMs: Object.fromEntries([1, 2, 4, 8, 16, 32, 64].filter((r) => r <= m.maxBatchSize).map((r) => [r, quietMs(r)])),
      maxBatchSize: m.maxBatchSize,
      loads: perLoad,
    };
  }
  progress.done();
  report(
    `Adaptive vs fixed windows: open loop, ${durationMs} ms per run, ${reps} seeded reps per setting, p99 over every answered request of them (pooled), timeoutMs ${TIMEOUT_MS}, ` +
      `a request shed or answered after ${BUDGET_MS} ms counts as missed; ` +
      `a live run with more than ${SLOW_SHARE * 100}% of its batches over twice the quiet run time is re-run (up to ${RETRIES} times); ` +
      'the targets are judged on the replay, where every setting meets the same machine',
    sections,
    targets,
  );
  writeResults('adaptive', args, { durationMs, reps, timeoutMs: TIMEOUT_MS, budgetMs: BUDGET_MS, retries: RETRIES, slowShare: SLOW_SHARE, models: data }, targets);
});
