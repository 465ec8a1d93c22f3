/**
 * Scenario: is the adaptive policy ever worse than the best fixed window? Open-loop Poisson
 * arrivals at 30 %, 70 % and 95 % of measured capacity, on two models with different cost curves
 * (the PaddleOCR classifier, where batching gains ~2×, and a wide generated MLP where the fixed
 * cost dominates and batching gains ~5×), inline. Settings: greedy with `maxDelayMs` ∈ {0, 2, 5,
 * 10} and `policy: 'adaptive'` with `maxLatencyMs: 100`. Every repetition runs all settings of a
 * load on the same seeded arrivals, in rotating order; p99 and shed counts are medians over the
 * repetitions. Target: adaptive p99 ≤ 1.1× the best fixed window's, with no more shed.
 *
 * Quiet runs only: this machine has spells where the model runs 2–3× slower (a 64-row MLP batch
 * 10–12 ms instead of 4.3, with the host's schedule gap-free), and one such spell in a 2 s run
 * sets that run's p99 whatever the setting. A run is measured against the model's quiet run time
 * per batch size (calibrated at the start) and re-run, up to `RETRIES` times, when more than
 * `SLOW_SHARE` of its batches ran over twice that time (+1 ms): the comparison is between
 * policies, not between the machine's spells. Every setting gets the same rule; the tables
 * report how many runs were re-run. Capacity is the best of four closed-loop measurements.
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
const ADAPTIVE = 'adaptive, maxLatencyMs 100';
const SETTINGS = [
  ...FIXED.map((d) => ({ label: `greedy, maxDelayMs ${d}`, options: { maxDelayMs: d } as const })),
  { label: ADAPTIVE, options: { policy: 'adaptive', maxLatencyMs: 100 } as const },
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

interface Cell {
  readonly p99: number[];
  readonly shed: number[];
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
    const caps: number[] = [];
    for (let r = 0; r < 5; r++) {
      progress.update(`${m.name} capacity ${r === 0 ? 'warm-up' : `rep ${r}/4`}`, true);
      const host = new ModelHost(concatBatchFn(m), { maxBatchSize: m.maxBatchSize });
      const res = await closedLoop({ clients: 4 * m.maxBatchSize, durationMs: 1000, call: (i) => host.inference(item(i)) });
      await host.stop();
      if (r > 0) caps.push(res.throughput);
    }
    // The quiet machine's capacity: a slow spell only ever lowers a measurement.
    const capacity = Math.max(...caps);
    progress.update(`${m.name} calibrating run times`, true);
    const quietMs = await calibrate(m, item);
    const cells = new Map<string, Cell>();
    for (const [li, load] of LOADS.entries()) {
      for (let rep = 0; rep < reps; rep++) {
        const schedule = poissonSchedule(capacity * load, durationMs, 7000 + li * 100 + rep);
        for (let k = 0; k < SETTINGS.length; k++) {
          const s = SETTINGS[(k + rep + li) % SETTINGS.length] as (typeof SETTINGS)[number];
          const key = `${load}|${s.label}`;
          const cell = cells.get(key) ?? { p99: [], shed: [], batch: [], reruns: 0, disturbed: 0 };
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
          cell.batch.push(st.meanBatchSize);
          cells.set(key, cell);
        }
      }
    }
    const rows: string[][] = [];
    const perLoad: Record<string, unknown> = {};
    for (const load of LOADS) {
      const cell = (label: string): Cell => cells.get(`${load}|${label}`) as Cell;
      const fixed = FIXED.map((d) => ({ d, p99: median(cell(`greedy, maxDelayMs ${d}`).p99), shed: median(cell(`greedy, maxDelayMs ${d}`).shed) }));
      const best = fixed.reduce((a, b) => (b.p99 < a.p99 ? b : a));
      const ad = cell(ADAPTIVE);
      const adP99 = median(ad.p99);
      const adShed = median(ad.shed);
      const r = ratio(adP99, best.p99);
      // Paired, reported beside the target: each repetition runs every setting back to back on the
      // same arrivals, so the ratio within a repetition cancels the machine's drift between
      // repetitions (its capacity moved from 1,034 to 801 items/s within an hour here), which the
      // ratio of medians does not.
      const bestCell = cell(`greedy, maxDelayMs ${best.d}`);
      const paired = median(ad.p99.map((p, i) => p / (bestCell.p99[i] as number)));
      for (const s of SETTINGS) {
        const c = cell(s.label);
        rows.push([
          `${Math.round(load * 100)}%`,
          s.label,
          fmt(median(c.p99), 2),
          `${fmt(Math.min(...c.p99), 1)} – ${fmt(Math.max(...c.p99), 1)}`,
          fmt(median(c.batch), 1),
          String(median(c.shed)),
          `${c.reruns}${c.disturbed > 0 ? ` (${c.disturbed} kept)` : ''}`,
          s.label === ADAPTIVE ? `${fmt(r, 2)}× best (${best.d} ms); paired ${fmt(paired, 2)}×` : '',
        ]);
      }
      targets.push({
        name: `${m.name} ${Math.round(load * 100)}%: adaptive p99 / best fixed window (no more shed)`,
        value: r,
        target: '≤ 1.1',
        pass: r <= 1.1 && adShed <= best.shed,
      });
      perLoad[String(load)] = { bestFixedDelayMs: best.d, bestFixedP99: best.p99, bestFixedShed: best.shed, adaptiveP99: adP99, adaptiveShed: adShed, ratio: r, pairedRatio: paired, cells: Object.fromEntries(SETTINGS.map((s) => [s.label, cell(s.label)])) };
    }
    sections.push({
      heading: `${m.name}: capacity ${fmt(capacity, 0)} items/s, maxBatchSize ${m.maxBatchSize}`,
      text: table(['load', 'setting', 'p99 ms (median)', 'p99 range', 'mean batch', 'shed', 're-runs (slow spells)', 'adaptive vs best (ratio of medians; median of per-rep ratios)'], rows),
    });
    data[m.name] = {
      capacity,
      capacityReps: caps,
      quietRunMs: Object.fromEntries([1, 2, 4, 8, 16, 32, 64].filter((r) => r <= m.maxBatchSize).map((r) => [r, quietMs(r)])),
      maxBatchSize: m.maxBatchSize,
      loads: perLoad,
    };
  }
  progress.done();
  report(
    `Adaptive vs fixed windows: open loop, ${durationMs} ms per run, median of ${reps} seeded reps, timeoutMs ${TIMEOUT_MS}; ` +
      `a run with more than ${SLOW_SHARE * 100}% of its batches over twice the quiet run time is re-run (up to ${RETRIES} times)`,
    sections,
    targets,
  );
  writeResults('adaptive', args, { durationMs, reps, timeoutMs: TIMEOUT_MS, retries: RETRIES, slowShare: SLOW_SHARE, models: data }, targets);
});
