import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { createInferenceServer } from '../../src/http';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput } from '../../src/generate/options';
import { createServingHost } from '../../src/onnx/serving-host';
import { prometheusMetrics } from '../../src/observe/prometheus';
import { call } from '../http/helpers';
import { linearModel } from '../support/onnx-models';
import { load } from './served';

// The shipped Grafana dashboard (grafana/microbatch.json) queries only series that /metrics of a
// running server exposes: a batching model and a generator, both observed by microbatch/prometheus.

interface Target {
  readonly expr: string;
}
interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: readonly Target[];
}
const dashboard = JSON.parse(readFileSync(join(__dirname, '..', '..', 'grafana', 'microbatch.json'), 'utf8')) as {
  readonly uid: string;
  readonly title: string;
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: ReadonlyArray<{ readonly name: string; readonly query: unknown }> };
};

/** PromQL's functions, aggregations and keywords these queries use: every other name must be a series. */
const PROMQL = new Set(['sum', 'max', 'rate', 'increase', 'histogram_quantile', 'label_values', 'by']);

/** The series names and the grouping labels a PromQL expression names. */
function parse(query: string): { series: string[]; labels: string[] } {
  // Grafana's label_values(series, label) names its label as a plain argument.
  const valuesOf = [...query.matchAll(/\blabel_values\(\s*[^,]+,\s*(\w+)\s*\)/g)].map((m) => m[1]!);
  const expr = query.replace(/\blabel_values\(\s*([^,]+),\s*\w+\s*\)/g, 'label_values($1)');
  const labels = [...expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim()));
  const matchers = [...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) => [...m[1]!.matchAll(/(\w+)\s*(?:=~|!=|=)/g)].map((l) => l[1]!));
  const bare = expr
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\bby \([^)]*\)/g, 'by')
    .replace(/\b\d+(\.\d+)?\b/g, '');
  const series = [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)].map((m) => m[0]).filter((n) => !PROMQL.has(n));
  return { series, labels: [...labels, ...matchers, ...valuesOf] };
}

/** Each series name in Prometheus text, with the label names its samples carry. */
function exposed(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? /.exec(line);
    if (m === null) continue;
    const names = out.get(m[1]!) ?? new Set<string>();
    for (const l of (m[2] ?? '').matchAll(/(\w+)="/g)) names.add(l[1]!);
    out.set(m[1]!, names);
  }
  return out;
}

test('the Grafana dashboard is an importable dashboard with the dashboard page\'s panels', () => {
  expect(dashboard).toMatchObject({ uid: 'microbatch', title: 'microbatch' });
  const titles = dashboard.panels.filter((p) => p.type !== 'row').map((p) => p.title);
  for (const panel of [/^Requests\/s/, /^Queue depth and running batches/, /^Batch size histogram/, /^Latency p50\/p99: queue wait .* and run time/, /release reason/, /^Refusals\/s by cause/, /^Tokens\/s/, /^Time to first token/, /^Running sequences/]) {
    expect(titles.some((t) => panel.test(t))).toBe(true);
  }
  expect(parse('label_values(m, host)')).toEqual({ series: ['m'], labels: ['host'] });
  expect(parse('histogram_quantile(0.5, sum by (host, le) (rate(a_bucket{host=~"$host", outcome!="ok"}[5m]))) / b')).toEqual({ series: ['a_bucket', 'b'], labels: ['host', 'le', 'host', 'outcome'] });
});

test('every query of the Grafana dashboard names series, and labels, that /metrics of a running server exposes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mb-grafana-'));
  const file = join(dir, 'linear.onnx');
  writeFileSync(file, linearModel(4, 3));
  const registry = new Registry();
  const prom = prometheusMetrics({ registry, maxBatchSize: 8 });
  const host = await createServingHost(file, { name: 'linear', maxBatchSize: 8, workers: 0, observer: prom.observer });
  prom.watch(host);
  const counter = new GenerationHost(async (xs: ReadonlyArray<StepInput<number>>) => xs.map((x) => ({ token: x.token + 1, state: 0 })), { maxBatchSize: 4, initialState: () => 0, name: 'counter', observer: prom.observer });
  const server = createInferenceServer({ models: { linear: host }, generators: { counter }, metrics: registry });
  const { port } = await server.listen(0);
  try {
    await load(port, 'linear', 20, 4);
    expect((await call(port, 'POST', '/v2/models/counter/generate', { body: { input_ids: [1], parameters: { max_tokens: 3 } } })).status).toBe(200);
    const series = exposed((await call(port, 'GET', '/metrics')).text);
    const queries = [
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr }))),
      ...dashboard.templating.list.filter((v) => typeof v.query === 'object').map((v) => ({ where: `variable ${v.name}`, expr: (v.query as { query: string }).query })),
    ];
    expect(queries.length).toBeGreaterThanOrEqual(18);
    const missing: string[] = [];
    for (const { where, expr } of queries) {
      const { series: names, labels } = parse(expr);
      if (names.length === 0) missing.push(`${where}: no series in ${expr}`);
      for (const n of names) if (!series.has(n)) missing.push(`${where}: ${n} is not in /metrics`);
      const all = new Set(names.flatMap((n) => [...(series.get(n) ?? [])]));
      for (const l of labels) if (!all.has(l)) missing.push(`${where}: label ${l} is on none of ${names.join(', ')}`);
    }
    expect(missing).toEqual([]);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
