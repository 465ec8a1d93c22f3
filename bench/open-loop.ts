/**
 * Scenario 4, open-loop sweep: Poisson arrivals at 10%…100% of measured capacity on the PaddleOCR
 * classifier (inline), greedy policy with maxDelayMs ∈ {0, 2, 5, 10} and the adaptive policy with
 * maxLatencyMs 100: throughput, p50/p90/p99 (counted from each request's scheduled arrival, so a
 * blocked event loop is not hidden), mean batch size, and requests rejected (the 1 s per-request
 * deadline, or shed by the adaptive policy). Capacity is measured first (256 closed-loop clients,
 * greedy, maxDelayMs 0). Every point is the median of `reps` seeded repetitions (the settings of a
 * load alternate within each repetition, on the same arrivals), with its range. Writes an SVG of
 * p99 (and p50) latency vs load: `docs/latency-vs-load.svg` in --full mode,
 * `bench/results/open-loop.svg` in --quick mode (so a quick run leaves the docs alone).
 *
 *   npx ts-node bench/open-loop.ts --quick
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelHost } from '../src/engine/model-host';
import {
  closedLoop,
  fmt,
  machineInfo,
  main,
  median,
  openLoop,
  pick,
  poissonSchedule,
  Progress,
  report,
  RESULTS_DIR,
  table,
  writeResults,
  type OpenLoopResult,
  type TargetResult,
} from './harness';
import { concatBatchFn, loadCls } from './models';
import { lineChart, type Series } from './svg';

/** The policies compared at every load: greedy with four windows, and adaptive with an SLO. */
const SETTINGS = [
  { label: 'greedy, maxDelayMs 0', options: { maxDelayMs: 0 } },
  { label: 'greedy, maxDelayMs 2', options: { maxDelayMs: 2 } },
  { label: 'greedy, maxDelayMs 5', options: { maxDelayMs: 5 } },
  { label: 'greedy, maxDelayMs 10', options: { maxDelayMs: 10 } },
  { label: 'adaptive, maxLatencyMs 100', options: { policy: 'adaptive', maxLatencyMs: 100 } },
] as const;
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd'];
const TIMEOUT_MS = 1000;

interface Run extends Omit<OpenLoopResult, 'latencies'> {
  readonly load: number;
  readonly rate: number;
  readonly setting: string;
  readonly rep: number;
  readonly meanBatchSize: number;
  readonly shed: number;
}

/** One setting at one load: medians over the repetitions, and the range of p99. */
interface Point {
  readonly load: number;
  readonly rate: number;
  readonly setting: string;
  readonly throughput: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p99Min: number;
  readonly p99Max: number;
  readonly meanBatchSize: number;
  readonly shed: number;
  readonly runs: readonly Run[];
}

main(async (args) => {
  const progress = new Progress('open-loop', args.progress);
  const m = await loadCls();
  const item = (i: number): Float32Array => m.items[i % m.items.length] as Float32Array;

  // 1. Capacity: closed loop, 256 clients, greedy, maxDelayMs 0.
  const capReps = pick(args, 2, 3);
  const caps: number[] = [];
  for (let r = 0; r < capReps + 1; r++) {
    progress.update(`capacity ${r === 0 ? 'warm-up' : `rep ${r}/${capReps}`}`, true);
    const host = new ModelHost(concatBatchFn(m), { maxBatchSize: m.maxBatchSize });
    const res = await closedLoop({ clients: 256, durationMs: pick(args, 1500, 3000), call: (i) => host.inference(item(i)) });
    await host.stop();
    if (r > 0) caps.push(res.throughput);
  }
  const capacity = median(caps);

  // 2. Sweep: each load level runs every setting `reps` times, the order rotating per repetition;
  // every setting of a repetition sees the same seeded arrivals.
  const loads = pick(args, [0.1, 0.3, 0.5, 0.7, 0.9, 1.0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]);
  const durationMs = pick(args, 1000, 2000);
  const reps = args.reps ?? pick(args, 1, 3);
  const load0 = machineInfo().loadavgAtStart;
  const runs: Run[] = [];
  for (const [li, load] of loads.entries()) {
    const rate = capacity * load;
    for (let rep = 0; rep < reps; rep++) {
      const schedule = poissonSchedule(rate, durationMs, 1000 + li * 100 + rep);
      for (let k = 0; k < SETTINGS.length; k++) {
        const setting = SETTINGS[(k + li + rep) % SETTINGS.length] as (typeof SETTINGS)[number];
        progress.update(`load ${Math.round(load * 100)}% (${fmt(rate, 0)}/s) rep ${rep + 1}/${reps} ${setting.label}`, true);
        const host = new ModelHost(concatBatchFn(m), { maxBatchSize: m.maxBatchSize, timeoutMs: TIMEOUT_MS, ...setting.options });
        const res = await openLoop(schedule, (i) => host.inference(item(i)));
        const s = host.stats;
        await host.stop();
        // The raw latencies stay out of the results file (the summary is what the runs keep).
        const { latencies: _raw, ...summary } = res;
        runs.push({ ...summary, load, rate, rep, setting: setting.label, meanBatchSize: s.meanBatchSize, shed: s.rejected.deadline + s.rejected.queueFull });
      }
    }
  }
  progress.done();
  const loadEnd = machineInfo().loadavgAtStart;

  const points: Point[] = [];
  for (const load of loads) {
    for (const { label } of SETTINGS) {
      const rs = runs.filter((r) => r.load === load && r.setting === label);
      const p99s = rs.map((r) => r.latency.p99);
      points.push({
        load,
        rate: (rs[0] as Run).rate,
        setting: label,
        throughput: median(rs.map((r) => r.throughput)),
        p50: median(rs.map((r) => r.latency.p50)),
        p90: median(rs.map((r) => r.latency.p90)),
        p99: median(p99s),
        p99Min: Math.min(...p99s),
        p99Max: Math.max(...p99s),
        meanBatchSize: median(rs.map((r) => r.meanBatchSize)),
        shed: median(rs.map((r) => r.shed)),
        runs: rs,
      });
    }
  }

  const rows = [...points]
    .sort((a, b) => SETTINGS.findIndex((x) => x.label === a.setting) - SETTINGS.findIndex((x) => x.label === b.setting) || a.load - b.load)
    .map((p) => [
      p.setting,
      `${Math.round(p.load * 100)}%`,
      fmt(p.rate, 0),
      fmt(p.throughput, 0),
      fmt(p.p50, 2),
      fmt(p.p90, 2),
      fmt(p.p99, 2),
      reps > 1 ? `${fmt(p.p99Min, 1)} – ${fmt(p.p99Max, 1)}` : '–',
      fmt(p.meanBatchSize, 1),
      String(p.shed),
    ]);

  const series: Series[] = SETTINGS.flatMap(({ label }, i) => {
    const ps = points.filter((p) => p.setting === label).sort((a, b) => a.load - b.load);
    const color = COLORS[i] as string;
    return [
      { name: label, color, points: ps.map((p) => [p.load * 100, p.p99] as const), ...(reps > 1 ? { range: ps.map((p) => [p.load * 100, p.p99Min, p.p99Max] as const) } : {}) },
      { name: `${label}: p50`, color, dashed: true, legend: false, points: ps.map((p) => [p.load * 100, p.p50] as const) },
    ];
  });
  const mi = machineInfo();
  const svg = lineChart(series, {
    title: 'Latency vs load: PaddleOCR classifier, inline, greedy windows and adaptive',
    subtitle: `Poisson arrivals, capacity ${fmt(capacity, 0)} items/s, maxBatchSize ${m.maxBatchSize}, ${durationMs / 1000} s per run`,
    xLabel: 'offered load (% of measured capacity)',
    yLabel: 'latency (ms, log scale)',
    xMin: 0,
    xMax: 100,
    xTicks: [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    yLog: true,
    legendNotes: ['solid: p99 (bar: range over reps)', 'dashed: p50'],
    caption: [
      `Each point: median of ${reps} seeded repetition${reps > 1 ? 's' : ''}, settings alternating. ${mi.cpu}, ${mi.cores} cores, Node ${mi.node}.`,
      `Load average ${load0.map((l) => l.toFixed(2)).join(' ')} at start, ${loadEnd.map((l) => l.toFixed(2)).join(' ')} at end (other jobs share the machine).`,
    ],
  });
  const svgPath = args.mode === 'full' ? join(__dirname, '..', 'docs', 'latency-vs-load.svg') : join(RESULTS_DIR, 'open-loop.svg');
  writeFileSync(svgPath, svg);

  const targets: TargetResult[] = [];
  report(
    `Open loop: PaddleOCR classifier, capacity ${fmt(capacity, 0)} items/s (closed loop, median of ${capReps}), ${durationMs} ms per run, median of ${reps} reps, timeoutMs ${TIMEOUT_MS}`,
    [
      {
        text: table(['policy', 'load', 'offered/s', 'done/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99 range', 'mean batch', 'shed'], rows),
      },
      { text: `plot: ${svgPath}` },
    ],
    targets,
  );
  writeResults('open-loop', args, { model: m.name, maxBatchSize: m.maxBatchSize, capacity, capacityReps: caps, durationMs, reps, timeoutMs: TIMEOUT_MS, svg: svgPath, points }, targets);
});
