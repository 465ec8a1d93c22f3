import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { createOnnxHost, type OnnxHost } from '../../src/onnx';
import { createInferenceServer, type InferenceServer } from '../../src/http';
import { seeded } from '../support/onnx-models';
import { call, jsonInputs, modelFiles } from './helpers';

// End to end over loopback with real onnxruntime models: what concurrent HTTP clients get back
// equals what session.run gives for their rows alone, in the JSON and the binary forms.

let files: ReturnType<typeof modelFiles>;
let linear: OnnxHost;
let multi: OnnxHost;
let int64: OnnxHost;
let server: InferenceServer;
let port: number;
const batchRows: number[] = [];

beforeAll(async () => {
  files = modelFiles();
  // The linear model runs in microseconds, faster than a request is parsed: a 5 ms window lets the
  // concurrent requests meet in batches (without it each would run alone, which is also correct).
  linear = await createOnnxHost(files.linear, { maxBatchSize: 16, maxDelayMs: 5, session: { intraOpNumThreads: 1 }, observer: { onBatch: (b) => batchRows.push(b.rows) } });
  multi = await createOnnxHost(files.multi, { maxBatchSize: 8, session: { intraOpNumThreads: 1 } });
  int64 = await createOnnxHost(files.int64, { maxBatchSize: 8, session: { intraOpNumThreads: 1 } });
  server = createInferenceServer({ models: { linear, multi, int64 } });
  ({ port } = await server.listen(0));
});
afterAll(async () => {
  await server.close();
  files.cleanup();
});

/** The reference: one session.run per row, on a separate session. */
async function direct(path: string, feeds: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const session = await InferenceSession.create(path);
  try {
    return (await session.run(feeds)) as Record<string, Tensor>;
  } finally {
    await session.release();
  }
}

test('48 concurrent clients get their own rows, equal to session.run, and share batches', async () => {
  const rows = Array.from({ length: 48 }, (_, i) => seeded(4, 1000 + i));
  const agent = new Agent({ keepAlive: true, maxSockets: 48 });
  try {
    batchRows.length = 0;
    const replies = await Promise.all(rows.map((r) => call(port, 'POST', '/v2/models/linear/infer', { agent, body: jsonInputs({ X: { shape: [1, 4], data: [...r] } }) })));
    const session = await InferenceSession.create(files.linear);
    try {
      for (const [i, reply] of replies.entries()) {
        expect(reply.status).toBe(200);
        const body = reply.json();
        expect(body.model_name).toBe('linear');
        expect(body.outputs).toHaveLength(1);
        expect(body.outputs[0]).toMatchObject({ name: 'Y', datatype: 'FP32', shape: [1, 3] });
        const want = (await session.run({ X: new Tensor('float32', rows[i]!, [1, 4]) })).Y!.data as Float32Array;
        // JSON carries the float32 values exactly (as doubles).
        expect(body.outputs[0].data).toEqual(Array.from(want));
      }
    } finally {
      await session.release();
    }
    expect(batchRows.reduce((a, b) => a + b, 0)).toBe(48);
    expect(Math.max(...batchRows)).toBeGreaterThan(1);
  } finally {
    agent.destroy();
  }
});

test('a request may carry several rows, and nested data is flattened', async () => {
  const reply = await call(port, 'POST', '/v2/models/linear/infer', { body: jsonInputs({ X: { shape: [2, 4], data: [[1, 2, 3, 4], [5, 6, 7, 8]] } }) });
  expect(reply.status).toBe(200);
  const want = await direct(files.linear, { X: new Tensor('float32', Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]), [2, 4]) });
  expect(reply.json().outputs[0]).toEqual({ name: 'Y', datatype: 'FP32', shape: [2, 3], data: Array.from(want.Y!.data as Float32Array) });
});

test('several inputs with a shared scalar, outputs filtered by name, and the id echoed', async () => {
  const body = {
    id: 'req-7',
    inputs: [
      { name: 'A', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] },
      { name: 'B', shape: [1, 3], datatype: 'FP32', data: [0.5, -1, 2] },
      { name: 'scale', shape: [], datatype: 'FP32', data: [3] },
    ],
    outputs: [{ name: 'P' }],
  };
  const reply = await call(port, 'POST', '/v2/models/multi/infer', { body });
  expect(reply.status).toBe(200);
  expect(reply.json()).toEqual({ model_name: 'multi', model_version: '1', id: 'req-7', outputs: [{ name: 'P', datatype: 'FP32', shape: [1], data: [0.5 - 2 + 6] }] });
});

test('INT64 in as numbers or strings, out as exact numbers (default) or strings (int64As)', async () => {
  const ids = [1, '2', 9, 0];
  const reply = await call(port, 'POST', '/v2/models/int64/infer', { body: { inputs: [{ name: 'ids', shape: [1, 4], datatype: 'INT64', data: ids }] } });
  expect(reply.status).toBe(200);
  const want = await direct(files.int64, { ids: new Tensor('int64', BigInt64Array.from([1n, 2n, 9n, 0n]), [1, 4]) });
  const outputs = Object.fromEntries(reply.json().outputs.map((o: { name: string }) => [o.name, o]));
  expect(outputs.doubled).toEqual({ name: 'doubled', datatype: 'INT64', shape: [1, 4], data: [2, 4, 18, 0] });
  expect(outputs.pooled.data).toEqual(Array.from(want.pooled!.data as Float32Array));

  const asStrings = createInferenceServer({ models: { int64 }, int64As: 'string', stopModelsOnClose: false });
  const { port: p2 } = await asStrings.listen(0);
  try {
    const r2 = await call(p2, 'POST', '/v2/models/int64/infer', { body: { inputs: [{ name: 'ids', shape: [1, 4], datatype: 'INT64', data: ids }], outputs: [{ name: 'doubled' }] } });
    expect(r2.json().outputs[0].data).toEqual(['2', '4', '18', '0']);
  } finally {
    await asStrings.close();
  }
});

test('binary tensors: raw float32 in, binary_data out, equal to session.run', async () => {
  const x = Float32Array.from([0.25, -1.5, 3, 7, 1, 2, 3, 4]);
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'X', shape: [2, 4], datatype: 'FP32', parameters: { binary_data_size: x.byteLength } }], outputs: [{ name: 'Y', parameters: { binary_data: true } }] }));
  const reply = await call(port, 'POST', '/v2/models/linear/infer', {
    body: Buffer.concat([header, Buffer.from(x.buffer)]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': header.length },
  });
  expect(reply.status).toBe(200);
  expect(reply.headers['content-type']).toBe('application/octet-stream');
  const jsonLength = Number(reply.headers['inference-header-content-length']);
  const head = JSON.parse(reply.body.subarray(0, jsonLength).toString());
  expect(head.outputs[0]).toEqual({ name: 'Y', datatype: 'FP32', shape: [2, 3], parameters: { binary_data_size: 24 } });
  const bytes = reply.body.subarray(jsonLength);
  expect(bytes.length).toBe(24);
  const y = new Float32Array(new Uint8Array(bytes).buffer);
  const want = await direct(files.linear, { X: new Tensor('float32', x, [2, 4]) });
  expect(Array.from(y)).toEqual(Array.from(want.Y!.data as Float32Array));
});

test('binary INT64 input with JSON output; binary_data_output asks for every output in binary', async () => {
  const ids = BigInt64Array.from([3n, 1n, 4n, 1n]);
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'ids', shape: [1, 4], datatype: 'INT64', parameters: { binary_data_size: 32 } }], parameters: { binary_data_output: true } }));
  const reply = await call(port, 'POST', '/v2/models/int64/infer', { body: Buffer.concat([header, Buffer.from(ids.buffer)]), headers: { 'Inference-Header-Content-Length': header.length } });
  expect(reply.status).toBe(200);
  const n = Number(reply.headers['inference-header-content-length']);
  const head = JSON.parse(reply.body.subarray(0, n).toString());
  let at = n;
  const out: Record<string, Buffer> = {};
  for (const o of head.outputs) {
    out[o.name] = reply.body.subarray(at, at + o.parameters.binary_data_size);
    at += o.parameters.binary_data_size;
  }
  expect(at).toBe(reply.body.length);
  expect(Array.from(new BigInt64Array(new Uint8Array(out.doubled!).buffer))).toEqual([6n, 2n, 8n, 2n]);
});

test('GET /v2/models/:name describes inputs and outputs; /v2/models lists the models', async () => {
  const meta = await call(port, 'GET', '/v2/models/multi');
  expect(meta.status).toBe(200);
  expect(meta.json()).toEqual({
    name: 'multi',
    platform: 'onnxruntime_onnx',
    versions: ['1'],
    max_batch_size: 8,
    inputs: [
      { name: 'A', datatype: 'FP32', shape: [-1, 3], dims: ['N', 3], batch_axis: 0 },
      { name: 'B', datatype: 'FP32', shape: [-1, 3], dims: ['N', 3], batch_axis: 0 },
      { name: 'scale', datatype: 'FP32', shape: [], dims: [], batch_axis: 'shared' },
    ],
    outputs: [
      { name: 'S', datatype: 'FP32', shape: [-1, 3], dims: ['N', 3], batch_axis: 0 },
      { name: 'P', datatype: 'FP32', shape: [-1], dims: ['N'], batch_axis: 0 },
    ],
  });
  const list = await call(port, 'GET', '/v2/models');
  expect(list.json()).toEqual({ models: [{ name: 'linear', versions: ['1'], state: 'ready' }, { name: 'multi', versions: ['1'], state: 'ready' }, { name: 'int64', versions: ['1'], state: 'ready' }] });
  expect((await call(port, 'GET', '/v2/models/linear/ready')).json()).toEqual({ name: 'linear', ready: true });
});

test('/v2/health/live and /v2/health/ready answer 200 when every model is loaded', async () => {
  const health = await call(port, 'GET', '/v2/health/live');
  expect(health.status).toBe(200);
  expect(health.json()).toEqual({ live: true });
  const ready = await call(port, 'GET', '/v2/health/ready');
  expect(ready.status).toBe(200);
  expect(ready.json()).toEqual({ live: true, ready: true, closing: false, models: { linear: 'ready', multi: 'ready', int64: 'ready' } });
});

test('server.handle mounted in a plain node:http server (as Express or Connect would) serves the same routes', async () => {
  const inference = createInferenceServer({ models: { linear }, stopModelsOnClose: false });
  const outer = createServer(inference.handle);
  await new Promise<void>((resolve) => outer.listen(0, '127.0.0.1', resolve));
  const { port: p } = outer.address() as AddressInfo;
  try {
    const reply = await call(p, 'POST', '/v2/models/linear/infer', { body: jsonInputs({ X: { shape: [1, 4], data: [1, 2, 3, 4] } }) });
    expect(reply.status).toBe(200);
    const want = await direct(files.linear, { X: new Tensor('float32', Float32Array.from([1, 2, 3, 4]), [1, 4]) });
    expect(reply.json().outputs[0].data).toEqual(Array.from(want.Y!.data as Float32Array));
    expect((await call(p, 'GET', '/v2/health/ready')).json()).toEqual({ live: true, ready: true, closing: false, models: { linear: 'ready' } });
    const bad = await call(p, 'POST', '/v2/models/linear/infer', { body: jsonInputs({ Z: { shape: [1, 4], data: [1, 2, 3, 4] } }) });
    expect({ status: bad.status, code: bad.json().code }).toEqual({ status: 400, code: 'unknown_input' });
  } finally {
    await new Promise((resolve) => outer.close(resolve));
    await inference.close();
  }
});
