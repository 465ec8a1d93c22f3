import { Agent } from 'node:http';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { Registry } from 'prom-client';
import { createServingHost } from '../../src/onnx/serving-host';
import { createInferenceServer } from '../../src/http';
import { prometheusMetrics } from '../../src/observe/prometheus';
import { seeded } from '../support/onnx-models';
import { call, gate, gatedBody, gatedHost, jsonInputs, modelFiles } from './helpers';
import { waitFor } from '../support/wait-for';

// /metrics serves Prometheus text: from the Prometheus adapter under real load (the model runs in
// a worker thread, so requests queue while a batch runs and form the next one), or from any
// function given as `metrics`.

let files: ReturnType<typeof modelFiles>;
beforeAll(() => (files = modelFiles()));
afterAll(() => files.cleanup());

/** The value of one sample line, e.g. `microbatch_batch_size_bucket{le="1",host="mlp"}`. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  if (line === undefined) throw new Error(`no sample ${name}{${labels}} in:\n${text}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('under load from 32 concurrent clients, /metrics shows batches larger than 1', async () => {
  const registry = new Registry();
  const prom = prometheusMetrics({ registry, maxBatchSize: 32 });
  const host = await createServingHost(files.mlp, { name: 'mlp', maxBatchSize: 32, workers: 1, threads: 1, observer: prom.observer });
  prom.watch(host);
  const server = createInferenceServer({ models: { mlp: host }, metrics: registry });
  const { port } = await server.listen(0);
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  try {
    const rows = Array.from({ length: 16 }, (_, i) => Array.from(seeded(64, 7 + i)));
    // The answers from the worker equal session.run on this thread, row by row.
    const session = await InferenceSession.create(files.mlp);
    const expected = await Promise.all(rows.map(async (r) => Array.from((await session.run({ X: new Tensor('float32', Float32Array.from(r), [1, 64]) })).Y!.data as Float32Array)));
    await session.release();
    // Bounded: 32 clients × 12 requests each.
    await Promise.all(
      Array.from({ length: 32 }, async (_, c) => {
        for (let i = 0; i < 12; i++) {
          const r = await call(port, 'POST', '/v2/models/mlp/infer', { agent, body: jsonInputs({ X: { shape: [1, 64], data: rows[(c + i) % rows.length]! } }) });
          expect(r.status).toBe(200);
          const got: number[] = r.json().outputs[0].data;
          got.forEach((v, j) => expect(v).toBeCloseTo(expected[(c + i) % rows.length]![j]!, 4));
        }
      }),
    );
    const m = await call(port, 'GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.headers['content-type']).toBe(registry.contentType);
    const total = sample(m.text, 'microbatch_batch_size_count', 'host="mlp"');
    const ofOne = sample(m.text, 'microbatch_batch_size_bucket', 'le="1",host="mlp"');
    const rowsSum = sample(m.text, 'microbatch_batch_size_sum', 'host="mlp"');
    expect(rowsSum).toBe(32 * 12);
    expect(total).toBeLessThan(32 * 12); // fewer batches than requests
    expect(ofOne).toBeLessThan(total); // some batch had more than one row
    expect(sample(m.text, 'microbatch_requests_total', 'host="mlp",outcome="ok"')).toBe(32 * 12);
  } finally {
    agent.destroy();
    await server.close();
  }
});

test('`metrics` may be a function returning the text (anything else is refused)', async () => {
  const host = await createServingHost(files.linear, { maxBatchSize: 4, workers: 0, threads: 1 });
  let scrapes = 0;
  const server = createInferenceServer({ models: { linear: host }, metrics: async () => `my_scrapes_total ${++scrapes}\n` });
  const { port } = await server.listen(0);
  try {
    const m = await call(port, 'GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(m.text).toBe('my_scrapes_total 1\n');
    expect((await call(port, 'GET', '/metrics')).text).toBe('my_scrapes_total 2\n');
  } finally {
    await server.close();
  }
  expect(() => createInferenceServer({ models: { linear: host }, metrics: 'text' as never })).toThrow(/`metrics` must be a function/);
});

test('under overload, the refusals counted (/metrics queue-full, /stats fail.count) equal the 503s the clients saw', async () => {
  const registry = new Registry();
  const prom = prometheusMetrics({ registry, maxBatchSize: 1 });
  const hold = gate();
  // One runs and two wait in the host; the server holds no more (maxConcurrentRequests 3) and refuses the rest.
  const host = gatedHost(hold, { name: 'overloaded', maxBatchSize: 1, observer: prom.observer });
  const unwatch = prom.watch(host);
  const server = createInferenceServer({ models: { m: host }, metrics: registry, limits: { maxConcurrentRequests: 3 } });
  const { port } = await server.listen(0);
  try {
    const first = call(port, 'POST', '/v2/models/m/infer', { body: gatedBody() });
    await waitFor(() => host.stats.running === 1);
    const all = [first, ...Array.from({ length: 24 }, () => call(port, 'POST', '/v2/models/m/infer', { body: gatedBody() }))];
    await waitFor(() => host.stats.queued === 2);
    setTimeout(() => hold.open(), 200);
    const replies = await Promise.all(all);
    const refused = replies.filter((r) => r.status === 503).length;
    expect(replies.filter((r) => r.status === 200).length).toBe(3);
    expect(refused).toBe(22);
    expect(replies.filter((r) => r.status === 503).every((r) => /limits\.maxConcurrentRequests/.test(r.json().error))).toBe(true);
    const m = await call(port, 'GET', '/metrics');
    expect(sample(m.text, 'microbatch_requests_total', 'host="overloaded",outcome="queue-full"')).toBe(refused);
    const stats = (await call(port, 'GET', '/v2/models/m/stats')).json().model_stats[0];
    expect(stats.inference_stats.fail.count).toBe(refused);
  } finally {
    hold.open();
    unwatch();
    await server.close();
  }
});
