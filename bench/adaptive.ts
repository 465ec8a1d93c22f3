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
 * window's, with no more misses. The A/A control's ratio to window 0 is what the measure reads
 * between two identical settings in the same run: the run's resolution, printed beside the
 * target. The median of the per-run p99s and the paired ratio are printed too.
 *
 * Quiet runs only: this machine has spells where the model runs 2–3× slower, and one such spell
 * in a 2 s run sets that run's p99 whatever the setting. A run is measured against the model's
 * quiet run time per batch size (calibrated at the start) and re-run, up to `RETRIES` times, when
 * more than `SLOW_SHARE` of its batches ran over twice that time (+1 ms). Every setting gets the
 * same rule; the tables report how many runs were re-run.
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

const FIXED = [0, 2, 5, 10] as const;
/** The latency budget of the comparison: adaptive's `maxLatencyMs`, and what counts as late for every setting. */
const BUDGET_MS = 100;
const ADAPTIVE = `adaptive, maxLatencyMs ${BUDGET_MS}`;
/**
 * Window 0 a second time, under its own label: an A/A control. It is never a candidate for the
 * best window; its ratio to window 0 is what the measure reads between two identical settings,
 * i.e. the resolution of this run.
 */
const CONTROL = 'greedy, maxDelayMs 0 (A/A control)';
const SETTINGS = [
  ...FIXED.map((d) => ({ label: `greedy, maxDelayMs ${d}`, options: { maxDelayMs: d } as const })),
  { label: ADAPTIVE, options: { policy: 'adaptive', maxLatencyMs: BUDGET_MS } as const },
  { label: CONTROL, options: { maxDelayMs: 0 } as const },
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
function pooledP99(runs: readonly Float64Array[]): number {
  const all: number[] = [];
  for (const r of runs) for (const v of r) all.push(v);
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
  /** Runs of this cell re-run because the machine was in a slow spell. */
  reruns: number;
  /** Runs kept although still disturbed after RETRIES re-runs. */
  disturbed: number;
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
    progress.update(`${m.name} calibrating run times`, true);
    const quietMs = await calibrate(m, item);
    const cells = new Map<string, Cell>();
    /** Every answered latency of a cell's runs (kept out of the results file). */
    const pooled = new Map<string, Float64Array[]>();
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
        const schedule = poissonSchedule(repCapacity * load, durationMs, 7000 + li * 100 + rep);
        for (let k = 0; k < SETTINGS.length; k++) {
          const s = SETTINGS[(k + rep + li) % SETTINGS.length] as (typeof SETTINGS)[number];
          const key = `${load}|${s.label}`;
          const cell = cells.get(key) ?? { p99: [], shed: [], late: [], batch: [], reruns: 0, disturbed: 0 };
          let res: Awaited<ReturnType<typeof openLoop>>;
          let st: ModelHost<Float32Array, Float32Array>['stats'];
          for (let attempt = 0; ; attempt++) {
            progress.update(`${m.name} load ${Math.round(load * 100)}% rep ${rep + 1}/${reps} ${s.label}${attempt > 0 ? ` (re-run ${attempt})` : ''}`, true);
            let batches = 0;
            let slow = 0;
            const host = new ModelHost(concatBatchFn(m), {
              maxBatchSize: m.maxBatchSize,
              timeoutMs: TIMEOUT_MS,
              ...s.options,
              observer: {
                onBatch: (e) => {
                  batches++;
                  if (e.runMs > 2 * quietMs(e.rows) + 1) slow++;
                },
              },
            });
            res = await openLoop(schedule, (i) => host.inference(item(i)));
            st = host.stats;
            await host.stop();
            if (slow <= Math.max(1, SLOW_SHARE * batches)) break;
            if (attempt === RETRIES) {
              cell.disturbed++;
              break;
            }
            cell.reruns++;
          }
          cell.p99.push(res.latency.p99);
          cell.shed.push(st.rejected.deadline + st.rejected.queueFull);
          let late = 0;
          for (const v of res.latencies) if (v > BUDGET_MS) late++;
          cell.late.push(late);
          cell.batch.push(st.meanBatchSize);
          cells.set(key, cell);
          const all = pooled.get(key) ?? [];
          all.push(res.latencies);
          pooled.set(key, all);
        }
      }
    }
    const rows: string[][] = [];
    const perLoad: Record<string, unknown> = {};
    for (const load of LOADS) {
      const cell = (label: string): Cell => cells.get(`${load}|${label}`) as Cell;
      const p99Of = (label: string): number => pooledP99(pooled.get(`${load}|${label}`) ?? []);
      const missesOf = (label: string): number => sum(cell(label).shed) + sum(cell(label).late);
      const fixed = FIXED.map((d) => {
        const label = `greedy, maxDelayMs ${d}`;
        return { d, label, p99: p99Of(label), misses: missesOf(label) };
      });
      const best = fixed.reduce((a, b) => (b.p99 < a.p99 ? b : a));
      const adP99 = p99Of(ADAPTIVE);
      const adMisses = missesOf(ADAPTIVE);
      const r = ratio(adP99, best.p99);
      const control = ratio(p99Of(CONTROL), p99Of('greedy, maxDelayMs 0'));
      // Beside the target, for comparison with earlier runs: the ratio of the per-run p99 medians,
      // and the paired ratio (median over repetitions of adaptive's p99 over the best window's in
      // the same repetition).
      const ad = cell(ADAPTIVE);
      const bestCell = cell(best.label);
      const ofMedians = ratio(median(ad.p99), median(bestCell.p99));
      const paired = median(ad.p99.map((p, i) => p / (bestCell.p99[i] as number)));
      for (const s of SETTINGS) {
        const c = cell(s.label);
        rows.push([
          `${Math.round(load * 100)}%`,
          s.label,
          fmt(p99Of(s.label), 2),
          fmt(median(c.p99), 2),
          `${fmt(Math.min(...c.p99), 1)} – ${fmt(Math.max(...c.p99), 1)}`,
          fmt(median(c.batch), 1),
          `${missesOf(s.label)} (${sum(c.shed)} shed)`,
          `${c.reruns}${c.disturbed > 0 ? ` (${c.disturbed} kept)` : ''}`,
          s.label === ADAPTIVE
            ? `**${fmt(r, 2)}×** best (${best.d} ms); of medians ${fmt(ofMedians, 2)}×, paired ${fmt(paired, 2)}×`
            : s.label === CONTROL
              ? `A/A: ${fmt(control, 2)}× window 0`
              : '',
        ]);
      }
      targets.push({
        name: `${m.name} ${Math.round(load * 100)}%: adaptive p99 / best fixed window (pooled; no more missed; A/A control ${fmt(control, 2)}×)`,
        value: r,
        target: '≤ 1.1',
        pass: r <= 1.1 && adMisses <= best.misses,
      });
      perLoad[String(load)] = {
        bestFixedDelayMs: best.d,
        bestFixedP99: best.p99,
        bestFixedMisses: best.misses,
        adaptiveP99: adP99,
        adaptiveMisses: adMisses,
        ratio: r,
        controlRatio: control,
        ratioOfMedians: ofMedians,
        pairedRatio: paired,
        pooledP99: Object.fromEntries(SETTINGS.map((s) => [s.label, p99Of(s.label)])),
        cells: Object.fromEntries(SETTINGS.map((s) => [s.label, cell(s.label)])),
      };
    }
    sections.push({
      heading: `${m.name}: capacity ${fmt(capacity, 0)} items/s at the start, ${fmt(Math.min(...repCapacities), 0)} – ${fmt(Math.max(...repCapacities), 0)} before the repetitions, maxBatchSize ${m.maxBatchSize}`,
      text: table(['load', 'setting', 'p99 ms (pooled)', 'p99 ms (median of runs)', 'p99 range (runs)', 'mean batch', `missed: shed or > ${BUDGET_MS} ms`, 're-runs (slow spells)', 'adaptive vs best window (pooled p99)'], rows),
    });
    data[m.name] = {
      capacity,
      capacityReps: caps,
      repCapacities,
      quietRunMs: Object.fromEntries([1, 2, 4, 8, 16, 32, 64].filter((r) => r <= m.maxBatchSize).map((r) => [r, quietMs(r)])),
      maxBatchSize: m.maxBatchSize,
      loads: perLoad,
    };
  }
  progress.done();
  report(
    `Adaptive vs fixed windows: open loop, ${durationMs} ms per run, ${reps} seeded reps per setting, p99 over every answered request of them (pooled), timeoutMs ${TIMEOUT_MS}, ` +
      `a request shed or answered after ${BUDGET_MS} ms counts as missed; ` +
      `a run with more than ${SLOW_SHARE * 100}% of its batches over twice the quiet run time is re-run (up to ${RETRIES} times)`,
    sections,
    targets,
  );
  writeResults('adaptive', args, { durationMs, reps, timeoutMs: TIMEOUT_MS, budgetMs: BUDGET_MS, retries: RETRIES, slowShare: SLOW_SHARE, models: data }, targets);
});
