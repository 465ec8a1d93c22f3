import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ModelHost } from '../../src/engine/model-host';
import { createInferenceServer, type InferenceServer } from '../../src/http';
import { ModelRepository } from '../../src/repository';
import { createServingCore, type InferenceServable, type ServingCore } from '../../src/serving';
import type { TensorLike } from '../../src/tensor/tensor-like';
import type { OnnxHostOptions } from '../../src/onnx';
import { call, gate, jsonInputs } from '../http/helpers';
import { waitFor } from '../support/wait-for';
import { tempRepository, TEST_DEFAULTS } from './helpers';

type Feeds = Record<string, TensorLike>;
type Repo = ReturnType<typeof tempRepository>;
let repo: Repo;
let core: ServingCore;
let server: InferenceServer;
let repository: ModelRepository;
let port: number;

async function serve(options: Partial<ConstructorParameters<typeof ModelRepository>[2]> = {}): Promise<void> {
  core = createServingCore({ filledLater: true });
  repository = new ModelRepository(repo.dir, core, { defaults: TEST_DEFAULTS, retireAfterMs: 20, ...options });
  await repository.start();
  server = createInferenceServer({ core });
  ({ port } = await server.listen(0));
}

beforeEach(() => {
  repo = tempRepository();
});
afterEach(async () => {
  await repository?.close();
  await server?.close();
  await core?.close();
  repo.cleanup();
});

const body = (rows = 1) => jsonInputs({ X: { shape: [rows, 4], data: new Array(rows * 4).fill(1) } });

/**
 * Hosts that look like the linear model and whose batches wait for `hold`: made with the options
 * the repository derived from each config, so what the test sees is each config in force.
 */
function heldHosts(hold: { promise: Promise<void> }): (path: string, options: OnnxHostOptions) => Promise<InferenceServable> {
  return async (_path, options) => {
    const { workers: _w, threads: _t, machine: _m, warmup: _u, ...hostOptions } = options;
    const host = new ModelHost<Feeds, Feeds>(
      async (items: readonly Feeds[]) => {
        await hold.promise;
        return items.map((f) => ({ Y: { type: 'float32', data: new Float32Array(3), dims: [f.X!.dims[0] as number, 3] } }));
      },
      hostOptions as never,
    );
    Object.defineProperty(host, 'model', {
      value: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 4], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 3], batchAxis: 0 }] },
    });
    return host as unknown as InferenceServable;
  };
}

test('two models with different max_batch_size, queue and time limit, served at once, each obey their own', async () => {
  repo.model('small', [1], 'max_batch_size: 2\ndynamic_batching { default_queue_policy { max_queue_size: 2 } }');
  repo.model('big', [1], 'max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 1000 default_queue_policy { max_queue_size: 100 } }');
  repo.model('timed', [1], 'max_batch_size: 4\ndynamic_batching { default_queue_policy { default_timeout_microseconds: 50000 } }');
  const hold = gate();
  await serve({ createHost: heldHosts(hold) });
  const infer = (model: string, rows = 1) => call(port, 'POST', `/v2/models/${model}/infer`, { body: body(rows) });

  // small: one runs (held), two wait, the fourth finds its queue full
  const small = [infer('small')];
  await waitFor(() => (core.model('small', undefined).stats?.running ?? 0) === 1, 10_000, 'small to start a batch');
  small.push(infer('small'), infer('small'));
  await waitFor(() => core.model('small', undefined).stats?.queued === 2, 10_000, 'two queued on small');
  const full = await infer('small');
  expect(full.status).toBe(503);
  expect(full.json()).toMatchObject({ code: 'queue_full' });
  // big: the same load is nowhere near its queue
  const big = [infer('big')];
  await waitFor(() => (core.model('big', undefined).stats?.running ?? 0) === 1, 10_000, 'big to start a batch');
  for (let i = 0; i < 5; i++) big.push(infer('big'));
  await waitFor(() => core.model('big', undefined).stats?.queued === 5, 10_000, 'five queued on big');
  // timed: past its 50 ms, its request is answered 504 while the others still wait
  const timed = await infer('timed');
  expect(timed.status).toBe(504);
  hold.open();
  expect((await Promise.all([...small, ...big])).map((r) => r.status)).toEqual(new Array(9).fill(200));

  const sizes = async (model: string) => (await call(port, 'GET', `/v2/models/${model}/stats`)).json().model_stats[0].batch_stats.map((b: { batch_size: number }) => b.batch_size);
  expect(await sizes('small')).toEqual([1, 2]);
  expect(await sizes('big')).toEqual([1, 5]);
  // a request of more rows than a model's max_batch_size is refused by that model alone
  expect((await infer('small', 3)).status).toBe(400);
  expect((await infer('big', 3)).status).toBe(200);
  const config = async (model: string) => (await call(port, 'GET', `/v2/models/${model}/config`)).json();
  expect(await config('small')).toMatchObject({ max_batch_size: 2, dynamic_batching: { max_queue_delay_microseconds: 0, default_queue_policy: { max_queue_size: 2 } } });
  expect(await config('big')).toMatchObject({ max_batch_size: 8, dynamic_batching: { max_queue_delay_microseconds: 1000, default_queue_policy: { max_queue_size: 100 } } });
  expect(await config('timed')).toMatchObject({ dynamic_batching: { default_queue_policy: { default_timeout_microseconds: 50000 } } });
});

test('versions side by side over HTTP: /versions/{v}/infer reaches that version, plain /infer the highest; metadata, config, listing and stats name them', async () => {
  repo.model('lin', [1, 2], 'max_batch_size: 4\nversion_policy { all { } }\ninstance_group [ { count: 1, kind: KIND_CPU } ]\nparameters { key: "splitOversize" value { string_value: "false" } }');
  await serve({ defaults: { ...TEST_DEFAULTS } });
  const infer = (path: string) => call(port, 'POST', path, { body: body() });
  const v1 = await infer('/v2/models/lin/versions/1/infer');
  const v2 = await infer('/v2/models/lin/versions/2/infer');
  const plain = await infer('/v2/models/lin/infer');
  expect([v1.json().model_version, v2.json().model_version, plain.json().model_version]).toEqual(['1', '2', '2']);
  expect(v1.json().outputs[0].data).not.toEqual(v2.json().outputs[0].data);
  expect(plain.json().outputs[0].data).toEqual(v2.json().outputs[0].data);
  expect((await call(port, 'GET', '/v2/models/lin')).json()).toMatchObject({ name: 'lin', versions: ['1', '2'], platform: 'onnxruntime_onnx', max_batch_size: 4 });
  expect((await call(port, 'GET', '/v2/models')).json()).toEqual({ models: [{ name: 'lin', versions: ['1', '2'], state: 'ready' }] });
  expect((await call(port, 'GET', '/v2/models/lin/versions/1/ready')).status).toBe(200);
  const missing = await call(port, 'GET', '/v2/models/lin/versions/3/ready');
  expect({ status: missing.status, body: missing.json() }).toEqual({ status: 404, body: { code: 'model_version_not_found', error: 'model "lin" has no version "3"; its versions are "1", "2"' } });
  expect((await infer('/v2/models/lin/versions/3/infer')).status).toBe(404);
  expect((await call(port, 'GET', '/v2/models/lin/versions/1/stats')).json().model_stats[0]).toMatchObject({ name: 'lin', version: '1', inference_count: 1 });
  expect((await call(port, 'GET', '/v2/models/lin/versions/2/stats')).json().model_stats[0]).toMatchObject({ name: 'lin', version: '2', inference_count: 2 });
  expect((await call(port, 'GET', '/v2/models/lin/versions/1/config')).json()).toEqual({
    name: 'lin',
    platform: 'onnxruntime_onnx',
    version_policy: { all: {} },
    max_batch_size: 4,
    input: [{ name: 'X', data_type: 'TYPE_FP32', dims: [4], batch_axis: 0 }],
    output: [{ name: 'Y', data_type: 'TYPE_FP32', dims: [3], batch_axis: 0 }],
    dynamic_batching: { max_queue_delay_microseconds: 0, default_queue_policy: { max_queue_size: 0 } },
    instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    parameters: { splitOversize: { string_value: 'false' } },
  });
});

test("the repository extension: index lists models never loaded, load and unload in explicit mode, Triton's errors", async () => {
  repo.model('a', [1]);
  repo.model('b', [1, 2], 'version_policy { latest { num_versions: 2 } }');
  await serve({ modelControlMode: 'explicit' });
  const post = (path: string, b?: unknown) => call(port, 'POST', path, b === undefined ? {} : { body: b });
  expect((await post('/v2/repository/index')).json()).toEqual([{ name: 'a' }, { name: 'b' }]);
  expect((await call(port, 'POST', '/v2/models/b/infer', { body: body() })).status).toBe(404);
  const loaded = await post('/v2/repository/models/b/load');
  expect({ status: loaded.status, body: loaded.json() }).toEqual({ status: 200, body: {} });
  expect((await post('/v2/repository/index', {})).json()).toEqual([
    { name: 'a' },
    { name: 'b', version: '1', state: 'READY', reason: '' },
    { name: 'b', version: '2', state: 'READY', reason: '' },
  ]);
  expect((await post('/v2/repository/index', { ready: true })).json()).toHaveLength(2);
  expect((await call(port, 'POST', '/v2/models/b/versions/1/infer', { body: body() })).status).toBe(200);
  expect((await post('/v2/repository/models/b/unload', { parameters: { unload_dependents: false } })).status).toBe(200);
  expect((await post('/v2/repository/index')).json()).toEqual([
    { name: 'a' },
    { name: 'b', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
    { name: 'b', version: '2', state: 'UNAVAILABLE', reason: 'unloaded' },
  ]);
  expect((await call(port, 'POST', '/v2/models/b/infer', { body: body() })).status).toBe(404);

  const errors: Array<[string, unknown, number, string, RegExp]> = [
    ['/v2/repository/models/nope/load', undefined, 404, 'model_not_found', /no model "nope" in the repository/],
    ['/v2/repository/models/a/load', { parameters: { 'file:1/model.onnx': 'AAAA' } }, 400, 'unsupported_parameter', /^load takes only "config" as parameters; got "file:1\/model.onnx"$/],
    ['/v2/repository/models/a/load', { parameters: { config: { max_batch_size: 2 } } }, 400, 'invalid_body', /expected parameters.config to be a string holding the config as JSON/],
    ['/v2/repository/models/a/load', { parameters: { config: '{"max_batch_size": 2,}' } }, 400, 'load_failed', /^load failed for model "a": the load request's config for "a":1:\d+: /],
    ['/v2/repository/models/a/unload', { parameters: [] }, 400, 'invalid_body', /expected "parameters" to be an object/],
    ['/v2/repository/index', { ready: 'yes' }, 400, 'invalid_body', /expected "ready" to be true or false, got "yes"/],
    ['/v2/repository/index', [1], 400, 'invalid_body', /expected the request body to be a JSON object/],
    ['/v2/repository/other/index', undefined, 501, 'named_repository', /this server has one model repository; leave the repository name \("other"\) out of the path/],
  ];
  for (const [path, b, status, code, message] of errors) {
    const r = await post(path, b);
    expect({ path, status: r.status, code: r.json().code }).toEqual({ path, status, code });
    expect(r.json().error).toMatch(message);
  }
  // A config override in Triton's JSON form, for this load only.
  expect((await post('/v2/repository/models/a/load', { parameters: { config: JSON.stringify({ max_batch_size: 3 }) } })).status).toBe(200);
  expect((await call(port, 'GET', '/v2/models/a/config')).json().max_batch_size).toBe(3);
  // A reload that fails answers 400 and leaves the versions serving.
  const failed = await post('/v2/repository/models/a/load', { parameters: { config: JSON.stringify({ platform: 'tensorrt_plan' }) } });
  expect({ status: failed.status, code: failed.json().code }).toEqual({ status: 400, code: 'load_failed' });
  expect((await call(port, 'POST', '/v2/models/a/infer', { body: body() })).status).toBe(200);
  const wrong = await call(port, 'GET', '/v2/repository/index');
  expect({ status: wrong.status, allow: wrong.headers.allow }).toEqual({ status: 405, allow: 'POST' });
});

test('none mode refuses load and unload with 503; a server without a repository answers 501', async () => {
  repo.model('a', [1]);
  await serve();
  const r = await call(port, 'POST', '/v2/repository/models/a/load');
  expect({ status: r.status, body: r.json() }).toEqual({
    status: 503,
    body: { code: 'model_control_disabled', error: "cannot load models: the repository's model control mode is 'none'; load requests need --model-control-mode explicit" },
  });
  expect((await call(port, 'POST', '/v2/repository/models/a/unload')).status).toBe(503);
  expect((await call(port, 'POST', '/v2/repository/index')).json()).toEqual([{ name: 'a', version: '1', state: 'READY', reason: '' }]);
  expect((await call(port, 'GET', '/v2')).json().extensions).toEqual(['binary_tensor_data', 'model_configuration', 'statistics', 'model_repository']);

  const plain = createInferenceServer({ models: { a: core.model('a', undefined) }, stopModelsOnClose: false });
  const { port: p } = await plain.listen(0);
  try {
    const none = await call(p, 'POST', '/v2/repository/index');
    expect({ status: none.status, code: none.json().code }).toEqual({ status: 501, code: 'no_repository' });
  } finally {
    await plain.close();
  }
});

test('poll mode over HTTP: a version folder added and another removed under a steady stream of requests, none failed', async () => {
  repo.model('lin', [1]);
  await serve({ modelControlMode: 'poll', pollIntervalMs: 50, retireAfterMs: 1000 });
  const statuses = new Map<number, number>();
  const versions = new Set<string>();
  let running = true;
  const client = async (): Promise<void> => {
    while (running) {
      const r = await call(port, 'POST', '/v2/models/lin/infer', { body: body() });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 200) versions.add(r.json().model_version as string);
    }
  };
  const clients = [client(), client(), client(), client()];
  await waitFor(() => (statuses.get(200) ?? 0) > 20, 20_000, 'answers from version 1');
  repo.version('lin', 2);
  rmSync(join(repo.dir, 'lin', '1'), { recursive: true });
  await waitFor(() => versions.has('2'), 30_000, 'answers from version 2');
  const seen = statuses.get(200) ?? 0;
  await waitFor(() => (statuses.get(200) ?? 0) > seen + 20, 20_000, 'more answers from version 2');
  running = false;
  await Promise.all(clients);
  expect([...statuses.keys()]).toEqual([200]);
  expect(versions).toEqual(new Set(['1', '2']));
  expect((await call(port, 'GET', '/v2/models/lin')).json().versions).toEqual(['2']);
}, 90_000);
