/**
 * Scenario 2, saturation on a real model: the PaddleOCR direction classifier and a generated MLP,
 * 256 closed-loop clients. Sides:
 *   (a) unbatched: one `session.run` per request;
 *   (b) microbatch inline: a ModelHost whose batch function concatenates the items into one
 *       tensor, runs it once and slices the output;
 *   (b') the same with a freshly allocated input array per batch (what a naive concat does);
 *   (d) the limit: back-to-back `session.run` on pre-formed batches of maxBatchSize, no framework.
 * (c), the worker executor, does not exist yet and is not measured.
 * Targets: (b) ≥ 95% of (d); report (b)/(a).
 *
 *   npx ts-node bench/saturation.ts --quick
 */
import {
  alternate,
  fmt,
  main,
  median,
  pick,
  Progress,
  ratio,
  report,
  table,
  writeResults,
  type TargetResult,
} from './harness';
import { loadModels } from './models';
import { B, C_ONE, C_PIPE, C_TWO, CLIENTS, saturationSides } from './saturation-sides';

main(async (args) => {
  const reps = args.reps ?? pick(args, 3, 5);
  const progress = new Progress('saturation', args.progress);
  const models = await loadModels(['mlp', 'cls']);
  const sections: { heading: string; text: string }[] = [];
  const targets: TargetResult[] = [];
  const data: Record<string, unknown> = {};
  for (const m of models) {
    const durationMs = m.name === 'paddleocr-cls' ? pick(args, 1500, 4000) : pick(args, 500, 2000);
    const sides = saturationSides(m, durationMs);
    const results = await alternate(sides, { reps, warmup: 1, progress, label: `${m.name} ` });
    const med = (name: string): number => median((results.get(name) ?? []).map((r) => r.throughput));
    const a = med('(a) unbatched');
    const b = med(B);
    const d = med('(d) limit: pre-formed batches');
    const c = Math.max(med(C_ONE), med(C_TWO), med(C_PIPE));
    const rows = sides.map((s) => {
      const tp = (results.get(s.name) ?? []).map((r) => r.throughput);
      return [
        s.name,
        fmt(median(tp), 0),
        `${fmt(Math.min(...tp), 0)} – ${fmt(Math.max(...tp), 0)}`,
        `${fmt(ratio(median(tp), d) * 100, 1)}%`,
        `${fmt(ratio(median(tp), a), 2)}×`,
        fmt(median((results.get(s.name) ?? []).map((r) => r.meanBatchSize)), 1),
      ];
    });
    sections.push({
      heading: `${m.name}: maxBatchSize ${m.maxBatchSize}, ${CLIENTS} clients, ${durationMs} ms per rep, median of ${reps}`,
      text: table(['side', 'items/s', 'range', 'of (d)', 'vs (a)', 'mean batch'], rows),
    });
    targets.push({ name: `saturation ${m.name}: (b)/(d)`, value: ratio(b, d), target: '≥ 0.95', pass: ratio(b, d) >= 0.95 });
    targets.push({ name: `saturation ${m.name}: best (c)/(d)`, value: ratio(c, d), target: '≥ 0.90', pass: ratio(c, d) >= 0.9 });
    targets.push({ name: `saturation ${m.name}: (b)/(a) (report only)`, value: ratio(b, a), target: 'report', pass: true });
    data[m.name] = {
      maxBatchSize: m.maxBatchSize,
      durationMs,
      sides: Object.fromEntries([...results].map(([k, v]) => [k, { medianThroughput: median(v.map((r) => r.throughput)), reps: v }])),
      bOverD: ratio(b, d),
      cOverD: ratio(c, d),
      bOverA: ratio(b, a),
    };
  }
  progress.done();
  report('Saturation: throughput under 256 closed-loop clients', sections, targets);
  writeResults('saturation', args, { clients: CLIENTS, reps, models: data }, targets);
});
