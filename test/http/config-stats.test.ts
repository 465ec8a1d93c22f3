import { createOnnxHost } from '../../src/onnx';
import { createInferenceServer } from '../../src/http';
import { call, gate, gatedBody, gatedHost, modelFiles } from './helpers';
import { waitFor } from '../support/wait-for';

// Triton's model configuration and statistics extensions, which operators' tools read.

test('GET /v2/models/{m}/config: Triton model configuration with the host batching settings', async () => {
  const files = modelFiles();
  const host = await createOnnxHost(files.multi, { maxBatchSize: 4, maxDelayMs: 2.5, maxQueueSize: 16, session: { intraOpNumThreads: 1 } });
  const s = createInferenceServer({ models: { multi: host } });
  const { port } = await s.listen(0);
  try {
    const r = await call(port, 'GET', '/v2/models/multi/versions/1/config');
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({
      name: 'multi',
      platform: 'onnxruntime_onnx',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 4,
      input: [
        { name: 'A', data_type: 'TYPE_FP32', dims: [3], batch_axis: 0 },
        { name: 'B', data_type: 'TYPE_FP32', dims: [3], batch_axis: 0 },
        { name: 'scale', data_type: 'TYPE_FP32', dims: [], batch_axis: 'shared' },
      ],
      output: [
        { name: 'S', data_type: 'TYPE_FP32', dims: [3], batch_axis: 0 },
        { name: 'P', data_type: 'TYPE_FP32', dims: [], batch_axis: 0 },
      ],
      dynamic_batching: { max_queue_delay_microseconds: 2500, default_queue_policy: { max_queue_size: 16 } },
    });
  } finally {
    await s.close();
    files.cleanup();
  }
});

test('GET /v2/models/{m}/stats: counts, queue and compute time, and batch stats per size', async () => {
  const hold = gate();
  const host = gatedHost(hold, { name: 'stats-host', maxBatchSize: 8 });
  const failing = gatedHost({ promise: Promise.resolve() }, { name: 'stats-failing', fail: new Error('boom') });
  const s = createInferenceServer({ models: { m: host, failing } });
  const { port } = await s.listen(0);
  try {
    const empty = (await call(port, 'GET', '/v2/models/m/stats')).json();
    expect(empty).toMatchObject({ model_stats: [{ name: 'm', version: '1', inference_count: 0, execution_count: 0, last_inference: 0, batch_stats: [] }] });
    // One request runs alone (held), two queue behind it and run together: batch sizes 1 and 2.
    const first = call(port, 'POST', '/v2/models/m/infer', { body: gatedBody() });
    await waitFor(() => host.stats.running === 1);
    const rest = [call(port, 'POST', '/v2/models/m/infer', { body: gatedBody() }), call(port, 'POST', '/v2/models/m/infer', { body: gatedBody() })];
    await waitFor(() => host.stats.queued === 2);
    hold.open();
    expect((await Promise.all([first, ...rest])).map((r) => r.status)).toEqual([200, 200, 200]);
    expect((await call(port, 'POST', '/v2/models/failing/infer', { body: gatedBody() })).status).toBe(500);

    const r = await call(port, 'GET', '/v2/models/m/versions/1/stats');
    expect(r.status).toBe(200);
    const [m] = r.json().model_stats;
    expect(m).toMatchObject({ name: 'm', version: '1', inference_count: 3, execution_count: 2 });
    expect(m.last_inference).toBeGreaterThan(0);
    const i = m.inference_stats;
    expect([i.success.count, i.fail.count, i.queue.count, i.compute_infer.count]).toEqual([3, 0, 3, 3]);
    expect(i.success.ns).toBeGreaterThan(0);
    expect(i.compute_infer.ns).toBeGreaterThan(0); // the first batch was held open
    expect(m.batch_stats.map((b: { batch_size: number; compute_infer: { count: number } }) => [b.batch_size, b.compute_infer.count])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    const f = (await call(port, 'GET', '/v2/models/failing/stats')).json().model_stats[0];
    expect([f.inference_count, f.execution_count, f.inference_stats.fail.count, f.inference_stats.success.count, f.batch_stats.length]).toEqual([0, 0, 1, 0, 0]);
  } finally {
    hold.open();
    await s.close();
  }
});

test('config and stats: 404 for an unknown model or version, 405 for POST', async () => {
  const s = createInferenceServer({ models: { m: gatedHost({ promise: Promise.resolve() }) } });
  const { port } = await s.listen(0);
  try {
    expect((await call(port, 'GET', '/v2/models/x/config')).json()).toMatchObject({ code: 'model_not_found', error: expect.stringMatching(/no model named "x"/) });
    expect((await call(port, 'GET', '/v2/models/m/versions/3/stats')).json()).toEqual({ code: 'model_version_not_found', error: 'model "m" has no version "3"; its version is "1"' });
    const post = await call(port, 'POST', '/v2/models/m/stats', { body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  } finally {
    await s.close();
  }
});

test('GET /v2/models/{m}/stats: cache_hit and cache_miss from a host with `cache: true`', async () => {
  const host = gatedHost({ promise: Promise.resolve() }, { name: 'stats-cached', cache: true });
  const s = createInferenceServer({ models: { m: host } });
  const { port } = await s.listen(0);
  try {
    for (let i = 0; i < 3; i++) expect((await call(port, 'POST', '/v2/models/m/infer', { body: gatedBody(1, 2) })).status).toBe(200);
    expect((await call(port, 'POST', '/v2/models/m/infer', { body: gatedBody(3, 4) })).status).toBe(200);
    expect(host.stats.cache).toMatchObject({ hits: 2, misses: 2 });
    const i = (await call(port, 'GET', '/v2/models/m/stats')).json().model_stats[0].inference_stats;
    expect([i.cache_hit.count, i.cache_miss.count]).toEqual([2, 2]);
  } finally {
    await s.close();
  }
});
