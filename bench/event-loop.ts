/**
 * Scenario 5, event loop: how long the event loop is blocked under saturation. An inline model
 * (onnxruntime-node's `session.run` is synchronous inside a setImmediate) blocks the loop for a
 * whole batch; the worker executor (not built yet) should not. Measured with
 * `perf_hooks.monitorEventLoopDelay` (1 ms resolution) while 256 closed-loop clients saturate:
 * (a) unbatched, (b) microbatch inline, and an idle baseline.
 *
 *   npx ts-node bench/event-loop.ts --quick
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import {
  alternate,
  fmt,
  main,
  median,
  pick,
  Progress,
  ratio,
  report,
  sleep,
  table,
  writeResults,
  type Side,
  type TargetResult,
} from './harness';
import { loadModels } from './models';
import { B, C_ONE, C_PIPE, saturationSides, type SatRep } from './saturation-sides';

interface LoopRep {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly throughput: number;
}

/** Runs `work` with an event-loop delay histogram enabled; delays in ms. */
async function measured(work: () => Promise<number>): Promise<LoopRep> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const throughput = await work();
  h.disable();
  // The histogram includes the 1 ms sampling interval itself; subtract it to get the added delay.
  const ms = (ns: number): number => Math.max(0, ns / 1e6 - 1);
  return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), throughput };
}

main(async (args) => {
  const reps = args.reps ?? pick(args, 3, 5);
  const progress = new Progress('event-loop', args.progress);
  const models = await loadModels(['mlp', 'cls']);
  const rows: string[][] = [];
  const data: Record<string, unknown> = {};
  const targets: TargetResult[] = [];
  for (const m of models) {
    const durationMs = m.name === 'paddleocr-cls' ? pick(args, 1500, 4000) : pick(args, 500, 2000);
    const base = saturationSides(m, durationMs).filter((s) => s.name === '(a) unbatched' || s.name === B || s.name === C_ONE || s.name === C_PIPE);
    const wrap = (s: Side<SatRep>): Side<LoopRep> => ({ name: s.name, run: (r) => measured(async () => (await s.run(r)).throughput) });
    const sides: Side<LoopRep>[] = [
      { name: 'idle (no load)', run: () => measured(async () => (await sleep(durationMs), 0)) },
      ...base.map(wrap),
    ];
    const results = await alternate(sides, { reps, warmup: 1, progress, label: `${m.name} ` });
    for (const s of sides) {
      const rs = results.get(s.name) ?? [];
      rows.push([
        m.name,
        s.name,
        fmt(median(rs.map((r) => r.p50)), 2),
        fmt(median(rs.map((r) => r.p99)), 2),
        fmt(median(rs.map((r) => r.max)), 2),
        s.name.startsWith('idle') ? '–' : fmt(median(rs.map((r) => r.throughput)), 0),
      ]);
    }
    const p99 = (name: string): number => median((results.get(name) ?? []).map((r) => r.p99));
    // The better worker layout: with as many onnxruntime threads as cores, the model's threads
    // compete with the event loop for CPU, and a starved loop shows delays it did not cause.
    const worker = Math.min(p99(C_ONE), p99(C_PIPE));
    targets.push({
      name: `event loop ${m.name}: delay p99, best worker side / inline`,
      value: ratio(worker, p99(B)),
      target: '< 1 (the point of workers)',
      pass: worker < p99(B),
    });
    data[m.name] = { maxBatchSize: m.maxBatchSize, durationMs, sides: Object.fromEntries(results) };
  }
  progress.done();
  report(
    `Event-loop delay under saturation (256 clients), ms beyond the 1 ms sampling interval, median of ${reps}`,
    [{ text: table(['model', 'side', 'delay p50', 'delay p99', 'delay max', 'items/s'], rows) }],
    targets,
  );
  writeResults('event-loop', args, { reps, models: data }, targets);
});
