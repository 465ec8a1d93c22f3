/**
 * Scenario 4, open-loop sweep: Poisson arrivals at 10%…100% of measured capacity on the PaddleOCR
 * classifier (inline), greedy policy with maxDelayMs ∈ {0, 2, 5, 10} and the adaptive policy with
 * maxLatencyMs 100: throughput, p50/p90/p99 (counted from each request's scheduled arrival, so a
 * blocked event loop is not hidden), mean batch size, and requests rejected (the 1 s per-request
 * deadline, or shed by the adaptive policy). Capacity is measured first (256 closed-loop clients,
 * greedy, maxDelayMs 0). Writes an SVG of p99 (and p50) latency vs load: `docs/latency-vs-load.svg` in --full
 * mode, `bench/results/open-loop.svg` in --quick mode (so a quick run leaves the docs alone).
 *
 *   npx ts-node bench/open-loop.ts --quick
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

interface Point extends OpenLoopResult {
  readonly load: number;
  readonly rate: number;
  readonly setting: string;
  readonly meanBatchSize: number;
  readonly shed: number;
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

  // 2. Sweep: each load level runs every setting, the order rotating per level.
  const loads = pick(args, [0.1, 0.3, 0.5, 0.7, 0.9, 1.0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]);
  const durationMs = pick(args, 1000, 5000);
  const points: Point[] = [];
  for (const [li, load] of loads.entries()) {
    const rate = capacity * load;
    const schedule = poissonSchedule(rate, durationMs, 1000 + li);
    for (let k = 0; k < SETTINGS.length; k++) {
      const setting = SETTINGS[(k + li) % SETTINGS.length] as (typeof SETTINGS)[number];
      progress.update(`load ${Math.round(load * 100)}% (${fmt(rate, 0)}/s) ${setting.label}`, true);
      const host = new ModelHost(concatBatchFn(m), { maxBatchSize: m.maxBatchSize, timeoutMs: TIMEOUT_MS, ...setting.options });
      const res = await openLoop(schedule, (i) => host.inference(item(i)));
      const s = host.stats;
      await host.stop();
      points.push({ ...res, load, rate, setting: setting.label, meanBatchSize: s.meanBatchSize, shed: s.rejected.deadline + s.rejected.queueFull });
    }
  }
  progress.done();

  const rows = [...points]
    .sort((a, b) => SETTINGS.findIndex((x) => x.label === a.setting) - SETTINGS.findIndex((x) => x.label === b.setting) || a.load - b.load)
    .map((p) => [
      p.setting,
      `${Math.round(p.load * 100)}%`,
      fmt(p.rate, 0),
      fmt(p.throughput, 0),
      fmt(p.latency.p50, 2),
      fmt(p.latency.p90, 2),
      fmt(p.latency.p99, 2),
      fmt(p.meanBatchSize, 1),
      String(p.shed),
    ]);

  const series: Series[] = SETTINGS.flatMap(({ label }, i) => {
    const ps = points.filter((p) => p.setting === label).sort((a, b) => a.load - b.load);
    return [
      { name: `${label}: p99`, color: COLORS[i] as string, points: ps.map((p) => [p.load * 100, p.latency.p99] as const) },
      { name: `${label}: p50`, color: COLORS[i] as string, dashed: true, points: ps.map((p) => [p.load * 100, p.latency.p50] as const) },
    ];
  });
  const svg = lineChart(series, {
    title: 'Latency vs load: PaddleOCR classifier, inline, greedy windows and adaptive',
    subtitle: `Poisson arrivals, capacity ${fmt(capacity, 0)} items/s, maxBatchSize ${m.maxBatchSize}, ${args.mode} run (${durationMs / 1000} s per point), 2-core CPU`,
    xLabel: 'offered load (% of measured capacity)',
    yLabel: 'latency (ms, log scale)',
    xMin: 0,
    xMax: 100,
    xTicks: [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    yLog: true,
  });
  const svgPath = args.mode === 'full' ? join(__dirname, '..', 'docs', 'latency-vs-load.svg') : join(RESULTS_DIR, 'open-loop.svg');
  writeFileSync(svgPath, svg);

  const targets: TargetResult[] = [];
  report(
    `Open loop: PaddleOCR classifier, capacity ${fmt(capacity, 0)} items/s (closed loop, median of ${capReps}), ${durationMs} ms per point, timeoutMs ${TIMEOUT_MS}`,
    [
      {
        text: table(['policy', 'load', 'offered/s', 'done/s', 'p50 ms', 'p90 ms', 'p99 ms', 'mean batch', 'shed'], rows),
      },
      { text: `plot: ${svgPath}` },
    ],
    targets,
  );
  writeResults('open-loop', args, { model: m.name, maxBatchSize: m.maxBatchSize, capacity, capacityReps: caps, durationMs, timeoutMs: TIMEOUT_MS, svg: svgPath, points }, targets);
});
