/**
 * A real server for the dashboard tests: the linear ONNX model on the main thread, the Prometheus
 * adapter on its host and `/metrics`, the dashboard on; and readers for what `/metrics` says.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { createInferenceServer, type InferenceServer, type InferenceServerOptions } from '../../src/http';
import { createServingHost } from '../../src/onnx/serving-host';
import { prometheusMetrics } from '../../src/observe/prometheus';
import { call, jsonInputs } from '../http/helpers';
import { linearModel } from '../support/onnx-models';

/** The linear model (4 in, 3 out) written to a temp folder for the file's tests; the path, once beforeAll ran. */
export function useLinearModel(): () => string {
  let dir: string | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mb-dash-'));
    writeFileSync(join(dir, 'linear.onnx'), linearModel(4, 3));
  });
  afterAll(() => rmSync(dir!, { recursive: true, force: true }));
  return () => join(dir!, 'linear.onnx');
}

export interface Served {
  readonly server: InferenceServer;
  readonly port: number;
  readonly registry: Registry;
}

/** Serves `linear.onnx` as `name` (maxBatchSize 8) with /metrics and the dashboard, on `port` (0: a free one). */
export async function serveLinear(file: string, name: string, port = 0, extra: Partial<InferenceServerOptions> = {}): Promise<Served> {
  const registry = new Registry();
  const prom = prometheusMetrics({ registry, maxBatchSize: 8 });
  const host = await createServingHost(file, { name, maxBatchSize: 8, maxDelayMs: 2, workers: 0, observer: prom.observer });
  prom.watch(host);
  const server = createInferenceServer({ models: { [name]: host }, metrics: registry, dashboard: true, ...extra });
  const address = await server.listen(port);
  return { server, port: address.port, registry };
}

/** `n` inference requests to `name`, `concurrency` at a time, each one row of 4; every answer must be 200. */
export async function load(port: number, name: string, n: number, concurrency = 16): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++;
          const r = await call(port, 'POST', `/v2/models/${name}/infer`, { agent, body: jsonInputs({ X: { shape: [1, 4], data: [1, 2, 3, 4] } }) });
          if (r.status !== 200) throw new Error(`infer answered ${r.status}: ${r.text}`);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
}

/** One sample of `/metrics` text, e.g. `sample(text, 'microbatch_batch_size_count', 'host="m"')`. */
export function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  if (line === undefined) throw new Error(`no sample ${name}{${labels}} in:\n${text}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The batch-size histogram of `host` in `/metrics`: cumulative count per `le` bound, `+Inf` last. */
export function metricsHistogram(text: string, host: string): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  const re = new RegExp(`^microbatch_batch_size_bucket\\{le="([^"]+)",host="${host}"\\} (\\d+)$`, 'gm');
  for (const m of text.matchAll(re)) out.push([m[1]!, Number(m[2])]);
  return out;
}

/** Per-size counts (`[rows, batches]`) bucketed by the bounds of a `/metrics` histogram, cumulatively. */
export function bucketed(bySize: ReadonlyArray<readonly [number, number]>, bounds: readonly string[]): Array<[string, number]> {
  return bounds.map((le) => [le, bySize.filter(([size]) => le === '+Inf' || size <= Number(le)).reduce((n, [, c]) => n + c, 0)]);
}

export { spawnServe } from '../support/spawn-serve';
