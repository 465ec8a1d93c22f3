// The whole path: HTTP → a front end (connectRedisHost) → Redis → a replica running an ONNX model,
// and front ends in other processes whose requests share batches on the replica.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ModelHost } from '../../../src';
import { createInferenceServer } from '../../../src/http';
import { createOnnxHost, type OnnxFeeds, type OnnxResults } from '../../../src/onnx';
import { connectHost, serveHost } from '../../../src/remote/redis';
import { call, jsonInputs, modelFiles } from '../../http/helpers';
import { linearReference } from '../../support/onnx-models';
import { describeWithRedis, startRedis, type RedisServer } from '../../support/redis-server';
import { ControlledModel } from '../../support/controlled-model';
import { waitFor } from '../../support/wait-for';
import { Registry } from 'prom-client';
import { prometheusRedisMetrics } from '../../../src/observe/prometheus';

let redis: RedisServer;

describeWithRedis('microbatch/redis end to end', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  test('createInferenceServer serves a connectRedisHost front end; the replica publishes the model description', async () => {
    const files = modelFiles();
    const front = await connectHost<OnnxFeeds, OnnxResults>({ url: redis.url, model: 'linear', claimIdleMs: 300 });
    const server = createInferenceServer({ models: { linear: front } });
    const { port } = await server.listen(0, '127.0.0.1');
    // No replica yet: the readiness routes send traffic elsewhere.
    expect((await call(port, 'GET', '/v2/health/ready')).status).toBe(503);
    const notReady = await call(port, 'GET', '/v2/models/linear/ready');
    expect({ status: notReady.status, body: notReady.json() }).toEqual({ status: 503, body: { name: 'linear', ready: false } });
    const host = await createOnnxHost(files.linear, { maxBatchSize: 8 });
    const replica = await serveHost(host, { url: redis.url, model: 'linear' });
    await waitFor(() => front.ready, 10_000, 'the front end sees the replica');
    expect(front.ready).toBe(true);
    expect(front.model.inputs).toEqual(host.model.inputs);
    expect(front.options).toEqual({ maxBatchSize: 8 });
    expect((await call(port, 'GET', '/v2/health/ready')).status).toBe(200);
    expect((await call(port, 'GET', '/v2/models/linear/ready')).json()).toEqual({ name: 'linear', ready: true });
    try {
      const rows = [
        [1, 2, 3, 4],
        [0.5, -1, 2, 0],
      ];
      const replies = await Promise.all(rows.map((r) => call(port, 'POST', '/v2/models/linear/infer', { body: jsonInputs({ X: { shape: [1, 4], data: r } }) })));
      replies.forEach((reply, i) => {
        expect(reply.status).toBe(200);
        const y = reply.json().outputs[0].data as number[];
        linearReference(rows[i]!).forEach((v, j) => expect(y[j]).toBeCloseTo(v, 5));
      });
    } finally {
      await server.close(); // closes the front end; the replica and its host go on
      await replica.close();
      await host.stop();
      files.cleanup();
    }
  });

  test("a front end's own timeoutMs holds over HTTP: 504 after its limit, not the server's 30 s", async () => {
    const X = { name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 as const };
    // A replica whose model never answers, with a signature the front end publishes to HTTP.
    const stuck = {
      name: 'stuck',
      model: { inputs: [X], outputs: [{ ...X, name: 'Y' }] },
      options: { maxBatchSize: 4, maxConcurrentBatches: 1 },
      stats: { queued: 0, running: 0, runningBatches: 0 },
      inference: () => new Promise<never>(() => undefined),
    };
    const replica = await serveHost(stuck, { url: redis.url, model: 'stuck' });
    const front = await connectHost<OnnxFeeds, OnnxResults>({ url: redis.url, model: 'stuck', timeoutMs: 300 });
    const server = createInferenceServer({ models: { stuck: front } });
    const { port } = await server.listen(0, '127.0.0.1');
    try {
      await waitFor(() => front.ready && front.options !== undefined, 10_000, 'the front end sees the replica');
      expect(front.options).toEqual({ maxBatchSize: 4, timeoutMs: 300 });
      const started = performance.now();
      const reply = await call(port, 'POST', '/v2/models/stuck/infer', { body: jsonInputs({ X: { shape: [1, 2], data: [1, 2] } }) });
      expect(reply.status).toBe(504);
      expect(reply.json().error).toContain('timeoutMs 300');
      expect(performance.now() - started).toBeLessThan(15_000);
    } finally {
      await server.close();
      await replica.close({ graceMs: 0 }).catch(() => undefined);
    }
  });

  test('Prometheus: queue depth, lag and the counters of both sides, as microbatch_redis_*', async () => {
    const m = new ControlledModel<number, number>();
    const host = new ModelHost(m.fn, { maxBatchSize: 2 });
    const front = await connectHost<number, number>({ url: redis.url, model: 'metered', claimIdleMs: 300 });
    // Five requests wait in Redis before the replica starts; it pulls one batch of two and holds it,
    // and the next batch of two ahead.
    const calls = [1, 2, 3, 4, 5].map((x) => front.inference(x));
    await waitFor(() => front.stats.sent >= 5, 10_000, 'five requests sent');
    const replica = await serveHost(host, { url: redis.url, model: 'metered', blockMs: 100 });
    const registry = new Registry();
    const metrics = prometheusRedisMetrics({ registry });
    metrics.watch(replica, { model: 'metered', role: 'replica' });
    const unwatch = metrics.watch(front, { model: 'metered', role: 'front_end' });
    try {
      await waitFor(() => m.calls.length > 0 && front.stats.lag === 1 && front.stats.replicas === 1, 10_000, 'a held batch of two, two ahead and a lag of one');
      const text = await registry.metrics();
      expect(text).toMatch(/^microbatch_redis_lag\{model="metered",role="front_end"\} 1$/m); // 2 running and 2 ahead on the busy replica, 1 waits
      expect(text).toMatch(/^microbatch_redis_queue_depth\{model="metered",role="front_end"\} 5$/m);
      expect(text).toMatch(/^microbatch_redis_replicas\{model="metered",role="front_end"\} 1$/m);
      expect(text).toMatch(/^microbatch_redis_sent_total\{model="metered",role="front_end"\} 5$/m);
      expect(text).toMatch(/^microbatch_redis_pulled_total\{model="metered",role="replica"\} 4$/m);
      expect(text).toMatch(/^# TYPE microbatch_redis_pulled_total counter$/m);
      for (let i = 0; i < 3; i++) {
        await waitFor(() => m.calls.length > i, 10_000, `batch ${i + 1}`);
        m.answer(i, (x) => x);
      }
      await Promise.all(calls);
      unwatch();
      const after = await registry.metrics();
      expect(after).not.toMatch(/role="front_end"/);
      expect(after).toMatch(/^microbatch_redis_pulled_total\{model="metered",role="replica"\} 5$/m);
    } finally {
      await front.close();
      await replica.close();
      await host.stop();
    }
  });

  test('batches mix requests from front ends in two other processes', async () => {
    const m = new ControlledModel<{ from: string; i: number }, string>();
    const host = new ModelHost(m.fn, { maxBatchSize: 32 });
    const replica = await serveHost(host, { url: redis.url, model: 'mixed', blockMs: 100 });
    const front = await connectHost<{ from: string; i: number }, string>({ url: redis.url, model: 'mixed' });
    try {
      // Hold the model with a first request, so that the others accumulate in Redis meanwhile.
      const first = front.inference({ from: 'here', i: 0 });
      await waitFor(() => m.calls.length > 0, 10_000, 'the first batch runs');
      const children = ['p1', 'p2'].map((name) => runFrontEnd(name, 8));
      // The replica reads ahead while its batch runs, every blockMs: wait until its host holds all
      // 16 (waiting only for the stream let a late entry of a busy machine miss the next batch).
      await waitFor(() => host.stats.queued === 16, 30_000, 'both processes sent, and the replica pulled everything ahead');
      m.answer(0, (x) => `${x.from}:${x.i}`);
      await expect(first).resolves.toBe('here:0');
      await waitFor(() => m.calls.length >= 2, 10_000, 'the mixed batch runs');
      const mixed = m.calls[1]!.items;
      expect(mixed).toHaveLength(16);
      expect(new Set(mixed.map((x) => x.from))).toEqual(new Set(['p1', 'p2']));
      m.answer(1, (x) => `${x.from}:${x.i}`);
      const outputs = await Promise.all(children);
      expect(outputs).toEqual(['p1', 'p2'].map((name) => JSON.stringify(Array.from({ length: 8 }, (_, i) => `${name}:${i}`))));
    } finally {
      // A failed expectation must not leave a batch pending, or stop() would wait on it forever.
      for (const c of m.calls) c.resolve(c.items.map(() => 'unanswered'));
      await front.close();
      await replica.close();
      await host.stop();
    }
  }, 60_000);
});

/** A front end in another process that sends `n` requests at once and prints the answers. */
function runFrontEnd(name: string, n: number): Promise<string> {
  const program = `
    const { connectHost } = require(${JSON.stringify(join(__dirname, '../../../src/remote/redis'))});
    (async () => {
      const front = await connectHost({ url: ${JSON.stringify(redis.url)}, model: 'mixed' });
      const out = await Promise.all(Array.from({ length: ${n} }, (_, i) => front.inference({ from: ${JSON.stringify(name)}, i })));
      await front.close();
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', program], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`front end ${name} exited ${code}: ${err}`))));
  });
}
