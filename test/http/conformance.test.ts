import Ajv from 'ajv';
import { createOnnxHost, type OnnxHost } from '../../src/onnx';
import { createInferenceServer, type InferenceServer } from '../../src/http';
import { call, gate, gatedBody, gatedHost, jsonInputs, modelFiles, type Reply } from './helpers';
import { waitFor } from '../support/wait-for';
import { OIP_SCHEMAS, OIP_SHARED_SCHEMAS } from './fixtures/open-inference-schemas';
import { TRITON_SCHEMAS, TRITON_SHARED_SCHEMAS } from './fixtures/triton-extension-schemas';

// Every endpoint's success and error answers, validated against the Open Inference Protocol's
// own schemas (transcribed in fixtures/open-inference-schemas.ts).

const ajv = new Ajv({ allErrors: true, strict: true });
for (const s of OIP_SHARED_SCHEMAS) ajv.addSchema(s);
for (const s of Object.values(OIP_SCHEMAS)) ajv.addSchema(s);
for (const s of [...TRITON_SHARED_SCHEMAS, ...Object.values(TRITON_SCHEMAS)]) ajv.addSchema(s);

function expectConforms(reply: Reply, status: number, schema: keyof typeof OIP_SCHEMAS | `triton:${keyof typeof TRITON_SCHEMAS}`): void {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('application/json');
  const validate = ajv.getSchema(schema.startsWith('triton:') ? schema : `oip:${schema}`)!;
  const body: unknown = reply.json();
  if (!validate(body)) throw new Error(`${schema}: ${ajv.errorsText(validate.errors)} in ${reply.text}`);
}

let files: ReturnType<typeof modelFiles>;
let linear: OnnxHost;
let server: InferenceServer;
let port: number;
const row = jsonInputs({ X: { shape: [1, 4], data: [1, 2, 3, 4] } });

beforeAll(async () => {
  files = modelFiles();
  linear = await createOnnxHost(files.linear, { maxBatchSize: 4, session: { intraOpNumThreads: 1 } });
  server = createInferenceServer({ models: { linear } });
  ({ port } = await server.listen(0));
});
afterAll(async () => {
  await server.close();
  files.cleanup();
});

test('the fixture accepts the protocol\'s own example request, so it is a fair oracle', () => {
  expect(ajv.validate('oip:inference_request', row)).toBe(true);
  expect(ajv.validate('oip:inference_request', { inputs: [{ name: 'x', shape: [1], datatype: 'FP32' }] })).toBe(false);
  expect(ajv.validate('oip:error', { error: { code: 'x', message: 'y' } })).toBe(false);
});

describe('server metadata GET /v2', () => {
  test('200: name, version, extensions', async () => {
    const r = await call(port, 'GET', '/v2');
    expectConforms(r, 200, 'server_metadata');
    expect(r.json()).toMatchObject({ name: 'microbatch', extensions: ['binary_tensor_data', 'model_configuration', 'statistics'] });
  });
  test('405 for another method, as the error object', async () => {
    const r = await call(port, 'POST', '/v2', { body: {} });
    expectConforms(r, 405, 'error');
    expect(r.json()).toEqual({ error: 'POST is not allowed on /v2; use GET, HEAD', code: 'method_not_allowed' });
  });
});

describe('health', () => {
  test('GET /v2/health/live: 200 { live: true }; 405 as the error object', async () => {
    const r = await call(port, 'GET', '/v2/health/live');
    expectConforms(r, 200, 'server_live');
    expect(r.json()).toEqual({ live: true });
    expectConforms(await call(port, 'PUT', '/v2/health/live'), 405, 'error');
  });
  test('GET /v2/health/ready: 200 when ready, 503 while a model loads', async () => {
    const r = await call(port, 'GET', '/v2/health/ready');
    expectConforms(r, 200, 'server_ready');
    expect(r.json()).toMatchObject({ live: true, ready: true });
    const loading = gate();
    const s = createInferenceServer({ models: { gated: loading.promise.then(() => gatedHost({ promise: Promise.resolve() })) } });
    const { port: p } = await s.listen(0);
    try {
      const notReady = await call(p, 'GET', '/v2/health/ready');
      expectConforms(notReady, 503, 'server_ready');
      expect(notReady.json()).toMatchObject({ live: true, ready: false });
    } finally {
      loading.open();
      await s.close();
    }
  });
});

describe.each([
  ['/v2/models/linear', ''],
  ['/v2/models/linear/versions/1', ' (versions/1)'],
])('model %s', (base, label) => {
  test(`metadata${label}: 200, platform onnxruntime_onnx, versions ["1"]`, async () => {
    const r = await call(port, 'GET', base);
    expectConforms(r, 200, 'model_metadata');
    expect(r.json()).toMatchObject({ name: 'linear', platform: 'onnxruntime_onnx', versions: ['1'] });
  });
  test(`ready${label}: 200 { name, ready }`, async () => {
    const r = await call(port, 'GET', `${base}/ready`);
    expectConforms(r, 200, 'model_ready');
    expect(r.json()).toEqual({ name: 'linear', ready: true });
  });
  test(`Triton's config and stats${label}: 200 in Triton's shapes`, async () => {
    const config = await call(port, 'GET', `${base}/config`);
    expectConforms(config, 200, 'triton:config');
    expect(config.json()).toMatchObject({ name: 'linear', platform: 'onnxruntime_onnx', max_batch_size: 4 });
    const stats = await call(port, 'GET', `${base}/stats`);
    expectConforms(stats, 200, 'triton:stats');
    expect(stats.json().model_stats[0]).toMatchObject({ name: 'linear', version: '1' });
  });
  test(`infer${label}: 200 with model_name and model_version; 400 as the error object`, async () => {
    const r = await call(port, 'POST', `${base}/infer`, { body: row });
    expectConforms(r, 200, 'inference_response');
    expect(r.json()).toMatchObject({ model_name: 'linear', model_version: '1' });
    const bad = await call(port, 'POST', `${base}/infer`, { body: jsonInputs({ Z: { shape: [1, 4], data: [1, 2, 3, 4] } }) });
    expectConforms(bad, 400, 'error');
    expect(bad.json()).toMatchObject({ code: 'unknown_input', error: expect.stringMatching(/input "Z" is not an input of model "linear"/) });
  });
});

describe('404s as the error object', () => {
  test.each([
    ['GET', '/v2/models/resnet', 'model_not_found', /no model named "resnet"/],
    ['GET', '/v2/models/resnet/versions/1/ready', 'model_not_found', /no model named "resnet"/],
    ['GET', '/v2/models/linear/versions/2', 'model_version_not_found', /model "linear" has no version "2"; its version is "1"/],
    ['GET', '/v2/models/linear/versions/2/ready', 'model_version_not_found', /has no version "2"/],
    ['POST', '/v2/models/linear/versions/2/infer', 'model_version_not_found', /has no version "2"/],
    ['GET', '/v1/models/linear', 'not_found', /no route for GET \/v1\/models\/linear; see GET \/v2/],
    ['GET', '/v2/models/linear/versions/2/config', 'model_version_not_found', /has no version "2"/],
    ['GET', '/v2/models/resnet/stats', 'model_not_found', /no model named "resnet"/],
  ])('%s %s → %s', async (method, path, code, message) => {
    const r = await call(port, method, path, method === 'POST' ? { body: row } : {});
    expectConforms(r, 404, 'error');
    expect(r.json().code).toBe(code);
    expect(r.json().error).toMatch(message);
  });
});

test('503 queue_full and 500 model_error answer the error object', async () => {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 1, maxQueueSize: 1 });
  const failing = gatedHost({ promise: Promise.resolve() }, { fail: new Error('boom') });
  const s = createInferenceServer({ models: { gated: host, failing } });
  const { port: p } = await s.listen(0);
  try {
    const running = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
    await waitFor(() => host.stats.running === 1);
    const queued = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
    await waitFor(() => host.stats.queued === 1);
    const refused = await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
    expectConforms(refused, 503, 'error');
    expect(refused.json().code).toBe('queue_full');
    const failed = await call(p, 'POST', '/v2/models/failing/infer', { body: gatedBody() });
    expectConforms(failed, 500, 'error');
    expect(failed.json()).toMatchObject({ code: 'model_error', error: 'the model failed: boom' });
    hold.open();
    expectConforms(await running, 200, 'inference_response');
    expectConforms(await queued, 200, 'inference_response');
  } finally {
    hold.open();
    await s.close();
  }
});
