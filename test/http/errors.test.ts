import { connect } from 'node:net';
import fc from 'fast-check';
import { createOnnxHost, type OnnxHost } from '../../src/onnx';
import { createInferenceServer, DEFAULT_LIMITS, type InferenceServer } from '../../src/http';
import type { ReleasePolicy } from '../../src/core/policy';
import { call, gate, gatedBody, gatedHost, jsonInputs, modelFiles } from './helpers';
import { waitFor } from '../support/wait-for';

// Every failure has its status and a JSON body `{ error: "<message>", code }` naming the problem,
// and nothing a client sends takes the server down.

let files: ReturnType<typeof modelFiles>;
let linear: OnnxHost;
let multi: OnnxHost;
let server: InferenceServer;
let port: number;
const log: string[] = [];

beforeAll(async () => {
  files = modelFiles();
  linear = await createOnnxHost(files.linear, { maxBatchSize: 4, session: { intraOpNumThreads: 1 } });
  multi = await createOnnxHost(files.multi, { maxBatchSize: 4, session: { intraOpNumThreads: 1 } });
  server = createInferenceServer({ models: { linear, multi }, limits: { maxBodyBytes: 4096, maxElements: 64 }, log: (l) => log.push(l) });
  ({ port } = await server.listen(0));
});
afterAll(async () => {
  await server.close();
  files.cleanup();
});

const infer = (body: unknown, model = 'linear', headers?: Record<string, string | number>) => call(port, 'POST', `/v2/models/${model}/infer`, { body, headers });
const X = (shape: number[], data: unknown[], datatype = 'FP32') => jsonInputs({ X: { shape, data, datatype } });

async function expectError(reply: Promise<{ status: number; json(): { error: string; code: string }; headers: Record<string, unknown> }>, status: number, code: string, message: RegExp): Promise<void> {
  const r = await reply;
  expect({ status: r.status, code: r.json().code }).toEqual({ status, code });
  expect(r.json().error).toMatch(message);
  expect(r.headers['content-type']).toBe('application/json');
}

describe('400: bad input, named', () => {
  test.each([
    ['an unknown input name', 'linear', () => jsonInputs({ Z: { shape: [1, 4], data: [1, 2, 3, 4] } }), 'unknown_input', /input "Z" is not an input of model "linear"; its inputs are "X"/],
    ['a missing input', 'multi', () => ({ inputs: [{ name: 'A', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] }), 'missing_input', /needs inputs "B", "scale"/],
    ['a duplicate input', 'linear', () => ({ inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }, { name: 'X', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }), 'duplicate_input', /given twice/],
    ['the wrong datatype', 'linear', () => X([1, 4], [1, 2, 3, 4], 'INT64'), 'wrong_datatype', /input "X": expected datatype FP32, got INT64/],
    ['an unknown datatype', 'linear', () => X([1, 4], [1, 2, 3, 4], 'FLOAT'), 'invalid_datatype', /"datatype" must be one of BOOL, .*got "FLOAT"/],
    ['the wrong rank', 'linear', () => X([4], [1, 2, 3, 4]), 'wrong_shape', /expected rank 2 \(dims \[N, 4\]\), got shape \[4\] of rank 1/],
    ['a wrong fixed dim', 'linear', () => X([1, 5], [1, 2, 3, 4, 5]), 'wrong_shape', /expected dims \[N, 4\], got shape \[1, 5\] \(axis 1 must be 4\)/],
    ['a batch over maxBatchSize', 'linear', () => X([5, 4], new Array(20).fill(0)), 'wrong_shape', /batch dimension .* must be from 1 to maxBatchSize 4, got 5/],
    ['an empty batch', 'linear', () => X([0, 4], []), 'wrong_shape', /must be from 1 to maxBatchSize 4, got 0/],
    ['data shorter than the shape', 'linear', () => X([2, 4], [1, 2, 3]), 'data_length', /expected 8 data elements \(the product of the shape\), got 3/],
    ['data longer than the shape', 'linear', () => X([1, 4], [1, 2, 3, 4, 5]), 'data_length', /expected 4 data elements .* got more/],
    ['a string in FP32 data', 'linear', () => X([1, 4], [1, 'two', 3, 4]), 'invalid_data', /data element 1 must be a number, got "two"/],
    ['a negative dim', 'linear', () => X([-1, 4], [1, 2, 3, 4]), 'invalid_shape', /"shape" must be an array of non-negative integers/],
    ['no inputs', 'linear', () => ({ inputs: [] }), 'invalid_request', /non-empty "inputs" array; model "linear" takes "X"/],
    ['an array body', 'linear', () => [1, 2], 'invalid_request', /must be a JSON object with an "inputs" array, got an array/],
    ['an unknown output', 'linear', () => ({ ...(X([1, 4], [1, 2, 3, 4]) as object), outputs: [{ name: 'nope' }] }), 'unknown_output', /output "nope" is not an output of model "linear"; its outputs are "Y"/],
    ['a bad timeout', 'linear', () => ({ ...(X([1, 4], [1, 2, 3, 4]) as object), parameters: { timeout_ms: -5 } }), 'invalid_request', /timeout_ms" must be a positive number/],
    ['data nested too deep', 'linear', () => X([1, 4], [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]), 'invalid_data', /nested more than 32 levels/],
  ] as ReadonlyArray<readonly [string, string, () => unknown, string, RegExp]>)('%s', async (_what, model, body, code, message) => {
    await expectError(infer(body(), model), 400, code, message);
  });

  test('too many elements (maxElements) is refused before the data is read', async () => {
    await expectError(infer(X([4, 4], []), 'linear'), 400, 'data_length', /expected 16/); // 16 ≤ 64: the count is fine, the data is not
    await expectError(infer({ inputs: [{ name: 'A', shape: [4, 3], datatype: 'FP32', data: [] }, { name: 'B', shape: [4, 3], datatype: 'FP32', data: [] }, { name: 'scale', shape: [], datatype: 'FP32', data: [1] }] }, 'multi'), 400, 'data_length', /input "A"/);
    const big = createInferenceServer({ models: { linear }, limits: { maxElements: 7 }, stopModelsOnClose: false });
    const { port: p } = await big.listen(0);
    try {
      await expectError(call(p, 'POST', '/v2/models/linear/infer', { body: X([2, 4], new Array(8).fill(0)) }), 400, 'too_many_elements', /more than 7 tensor elements \(maxElements\); input "X" alone has 8/);
    } finally {
      await big.close();
    }
  });

  test('malformed JSON', async () => {
    await expectError(infer('{"inputs": [', 'linear', { 'Content-Type': 'application/json' }), 400, 'invalid_json', /not valid JSON/);
  });

  test('an unsupported content type', async () => {
    await expectError(infer('inputs=1', 'linear', { 'Content-Type': 'application/x-www-form-urlencoded' }), 400, 'unsupported_content_type', /application\/x-www-form-urlencoded.*send application\/json/);
  });

  test('binary sizes that do not add up', async () => {
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 16 } }] }));
    const send = (extra: number, headerLength: number | string = header.length) =>
      call(port, 'POST', '/v2/models/linear/infer', { body: Buffer.concat([header, Buffer.alloc(extra)]), headers: { 'Inference-Header-Content-Length': headerLength } });
    await expectError(send(12), 400, 'binary_size', /binary_data_size 16 runs past the 12 bytes/);
    await expectError(send(20), 400, 'binary_size', /add up to 16 bytes, but 20 bytes of binary data follow/);
    await expectError(send(16, 'abc'), 400, 'invalid_header', /Inference-Header-Content-Length must be a byte count/);
    await expectError(send(16, 100000), 400, 'invalid_header', /is 100000, but the body has only/);
    const wrongSize = Buffer.from(JSON.stringify({ inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 12 } }] }));
    await expectError(
      call(port, 'POST', '/v2/models/linear/infer', { body: Buffer.concat([wrongSize, Buffer.alloc(12)]), headers: { 'Inference-Header-Content-Length': wrongSize.length } }),
      400,
      'data_length',
      /expected 16 bytes of binary data \(4 elements × 4 bytes of FP32\), got 12/,
    );
  });
});

describe('routes', () => {
  test('404 for an unknown model, naming the served ones', async () => {
    await expectError(infer(X([1, 4], [1, 2, 3, 4]), 'resnet'), 404, 'model_not_found', /no model named "resnet"; the served models are "linear", "multi"/);
    await expectError(call(port, 'GET', '/v2/models/resnet'), 404, 'model_not_found', /no model named "resnet"/);
  });

  test('404 for an unknown route', async () => {
    await expectError(call(port, 'GET', '/v1/nothing/here'), 404, 'not_found', /no route for GET \/v1\/nothing\/here/);
    await expectError(call(port, 'GET', '/metrics'), 404, 'not_found', /no metrics source: in code, pass `metrics` .* to createInferenceServer; with `microbatch serve`, install prom-client \(npm install prom-client\)/);
  });

  test('405 with Allow for a wrong method', async () => {
    const r = await call(port, 'GET', '/v2/models/linear/infer');
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('POST');
    expect(r.json()).toEqual({ code: 'method_not_allowed', error: 'GET is not allowed on /v2/models/linear/infer; use POST' });
    const r2 = await call(port, 'DELETE', '/v2/health/live');
    expect(r2.status).toBe(405);
    expect(r2.headers.allow).toBe('GET, HEAD');
  });
});

describe('413: body over maxBodyBytes', () => {
  test('announced by Content-Length: refused before reading, connection closed', async () => {
    const r = await infer('x'.repeat(5000), 'linear', { 'Content-Type': 'application/json' });
    expect(r.status).toBe(413);
    expect(r.headers.connection).toBe('close');
    expect(r.json()).toEqual({ code: 'payload_too_large', error: 'the request body (Content-Length 5000) exceeds the limit of 4096 bytes (maxBodyBytes)' });
  });

  test('chunked, without Content-Length: cut off once past the limit', async () => {
    const r = await call(port, 'POST', '/v2/models/linear/infer', { body: Buffer.alloc(6000, 32), chunked: true, headers: { 'Content-Type': 'application/json' } });
    expect(r.status).toBe(413);
    expect(r.json().error).toBe('the request body exceeds the limit of 4096 bytes (maxBodyBytes)');
  });
});

describe('503, 504, 500: the host refused or failed', () => {
  test('queue full: 503 with Retry-After', async () => {
    const hold = gate();
    const host = gatedHost(hold, { maxBatchSize: 1, maxQueueSize: 1 });
    const s = createInferenceServer({ models: { gated: host }, limits: { retryAfterSeconds: 3 } });
    const { port: p } = await s.listen(0);
    try {
      const running = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(1, 2) });
      await waitFor(() => host.stats.running === 1);
      const queued = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(3, 4) });
      await waitFor(() => host.stats.queued === 1);
      const refused = await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(5, 6) });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('3');
      expect(refused.json().code).toBe('queue_full');
      expect(refused.json().error).toMatch(/the queue is full \(maxQueueSize is 1 waiting requests\)/);
      hold.open();
      expect((await running).json().outputs[0].data).toEqual([2, 4]);
      expect((await queued).json().outputs[0].data).toEqual([6, 8]);
    } finally {
      hold.open();
      await s.close();
    }
  });

  test('limits.maxConcurrentRequests: 503 queue_full before the body is read, even with an unbounded host queue', async () => {
    expect(DEFAULT_LIMITS.maxConcurrentRequests).toBe(1024);
    const hold = gate();
    const host = gatedHost(hold, { maxBatchSize: 1 }); // maxQueueSize left at Infinity
    const s = createInferenceServer({ models: { gated: host }, limits: { maxConcurrentRequests: 2 } });
    const { port: p } = await s.listen(0);
    try {
      const running = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(1, 2) });
      const queued = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(3, 4) });
      await waitFor(() => host.stats.running === 1 && host.stats.queued === 1);
      const refused = await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(5, 6) });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.json()).toEqual({ code: 'queue_full', error: 'the server is already handling 2 inference requests (limits.maxConcurrentRequests); retry later' });
      expect({ running: host.stats.running, queued: host.stats.queued }).toEqual({ running: 1, queued: 1 }); // the refused one never reached the host
      hold.open();
      expect((await running).json().outputs[0].data).toEqual([2, 4]);
      expect((await queued).json().outputs[0].data).toEqual([6, 8]);
      // The slots are given back once answered.
      expect((await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(5, 6) })).json().outputs[0].data).toEqual([10, 12]);
    } finally {
      hold.open();
      await s.close();
    }
  });

  test('shed by the policy: 503 with Retry-After', async () => {
    const shedAll: ReleasePolicy = { name: 'shed-all', decide: (q) => ({ release: false, shed: [...q.requests()] }) };
    const s = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }, { policy: shedAll }) } });
    const { port: p } = await s.listen(0);
    try {
      const r = await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('1');
      expect(r.json().code).toBe('shed');
      expect(r.json().error).toMatch(/shed-all/);
    } finally {
      await s.close();
    }
  });

  test('past its time limit: 504, from the Timeout-Ms header or parameters.timeout_ms', async () => {
    const hold = gate();
    const s = createInferenceServer({ models: { gated: gatedHost(hold) } });
    const { port: p } = await s.listen(0);
    try {
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(), headers: { 'Timeout-Ms': 30 } }), 504, 'deadline_exceeded', /^gated: timed out after [\d.]+ ms \(timeoutMs 30\) while its batch was running/);
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: { ...(gatedBody() as object), parameters: { timeout_ms: 30 } } }), 504, 'deadline_exceeded', /timed out after [\d.]+ ms (in the queue )?\(timeoutMs 30\)/);
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(), headers: { 'Timeout-Ms': 'soon' } }), 400, 'invalid_header', /Timeout-Ms header must be a positive number/);
    } finally {
      hold.open();
      await s.close();
    }
  });

  test('the server default limits.timeoutMs applies when the client names none', async () => {
    const hold = gate();
    const s = createInferenceServer({ models: { gated: gatedHost(hold) }, limits: { timeoutMs: 40 } });
    const { port: p } = await s.listen(0);
    try {
      const r = await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      expect(r.status).toBe(504);
    } finally {
      hold.open();
      await s.close();
    }
  });

  test("a host's own timeoutMs holds over HTTP unless the client or the server asks for less", async () => {
    const hold = gate();
    const host = gatedHost(hold, { timeoutMs: 60 });
    const s = createInferenceServer({ models: { gated: host } }); // the server's default limit: 30 s
    const { port: p } = await s.listen(0);
    try {
      const started = Date.now();
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() }), 504, 'deadline_exceeded', /\(timeoutMs 60\)/);
      expect(Date.now() - started).toBeLessThan(5_000);
      // A client asking for more does not lift it; one asking for less gets less.
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(), headers: { 'Timeout-Ms': 10_000 } }), 504, 'deadline_exceeded', /\(timeoutMs 60\)/);
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody(), headers: { 'Timeout-Ms': 20 } }), 504, 'deadline_exceeded', /\(timeoutMs 20\)/);
    } finally {
      hold.open();
      await s.close();
    }
    const hold2 = gate();
    const s2 = createInferenceServer({ models: { gated: gatedHost(hold2, { timeoutMs: 60_000 }) }, limits: { timeoutMs: 25 } });
    const { port: p2 } = await s2.listen(0);
    try {
      await expectError(call(p2, 'POST', '/v2/models/gated/infer', { body: gatedBody() }), 504, 'deadline_exceeded', /\(timeoutMs 25\)/); // the server's shorter one
    } finally {
      hold2.open();
      await s2.close();
    }
  });

  test('a model that throws: 500 naming the error, and the server keeps serving', async () => {
    const s = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }, { fail: new Error('CUDA out of memory') }) }, log: (l) => log.push(l) });
    const { port: p } = await s.listen(0);
    try {
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() }), 500, 'model_error', /the model failed: CUDA out of memory/);
      expect(log.some((l) => l.includes('500 model_error'))).toBe(true);
      expect((await call(p, 'GET', '/v2/health/live')).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  test('a stopped host: 503 model_stopped', async () => {
    const host = gatedHost({ promise: Promise.resolve() });
    const s = createInferenceServer({ models: { gated: host } });
    const { port: p } = await s.listen(0);
    try {
      await host.stop();
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() }), 503, 'model_stopped', /stopped/);
    } finally {
      await s.close();
    }
  });

  test('a model still loading: 503 and /v2/health/ready not ready; a failed load: 503 naming the error', async () => {
    const loading = gate();
    const later = loading.promise.then(() => gatedHost({ promise: Promise.resolve() }));
    const s = createInferenceServer({ models: { gated: later, broken: Promise.reject(new Error('no such file: missing.onnx')) }, log: (l) => log.push(l) });
    const { port: p } = await s.listen(0);
    try {
      await expectError(call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() }), 503, 'model_loading', /still loading/);
      const notReady = await call(p, 'GET', '/v2/health/ready');
      expect(notReady.status).toBe(503);
      expect(notReady.json()).toEqual({ live: true, ready: false, closing: false, models: { gated: 'loading', broken: 'failed' } });
      await expectError(call(p, 'POST', '/v2/models/broken/infer', { body: gatedBody() }), 503, 'model_unavailable', /failed to load: no such file: missing.onnx/);
      loading.open();
      await waitFor(async () => (await call(p, 'GET', '/v2/models/gated')).status === 200);
      expect((await call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() })).status).toBe(200);
      expect((await call(p, 'GET', '/v2/health/ready')).json().models).toEqual({ gated: 'ready', broken: 'failed' });
    } finally {
      await s.close();
    }
  });
});

describe('nothing a client sends crashes the server', () => {
  test('arbitrary JSON bodies get a 4xx or a 200, never a 5xx or a dropped connection', async () => {
    const value = fc.oneof(
      fc.jsonValue(),
      fc.record({ inputs: fc.array(fc.record({ name: fc.constantFrom('X', 'A', 'B', 'scale', '__proto__', 'constructor'), shape: fc.array(fc.oneof(fc.integer({ min: -2, max: 6 }), fc.constant(1e12), fc.constant(1.5)), { maxLength: 4 }), datatype: fc.constantFrom('FP32', 'INT64', 'BOOL', 'BYTES', 'FP16', 'x'), data: fc.jsonValue() }, { requiredKeys: [] }), { maxLength: 4 }) }),
    );
    await fc.assert(
      fc.asyncProperty(value, fc.constantFrom('linear', 'multi'), async (body, model) => {
        const r = await call(port, 'POST', `/v2/models/${model}/infer`, { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
        expect([200, 400, 413]).toContain(r.status);
        if (r.status !== 200) expect(typeof r.json().error).toBe('string');
      }),
      { numRuns: 150 },
    );
  });

  test('garbage bytes, random headers, and broken HTTP leave it serving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 512 }), fc.constantFrom('application/json', 'application/octet-stream', ''), fc.option(fc.integer({ min: -5, max: 600 })), async (bytes, type, headerLength) => {
        const headers: Record<string, string | number> = type === '' ? {} : { 'Content-Type': type };
        if (headerLength !== null) headers['Inference-Header-Content-Length'] = headerLength;
        const r = await call(port, 'POST', '/v2/models/linear/infer', { body: Buffer.from(bytes), headers });
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.status).toBeLessThan(500);
      }),
      { numRuns: 100 },
    );
    // Not HTTP at all, and a request cut off mid-body.
    for (const raw of ['HELLO\r\n\r\n', 'POST /v2/models/linear/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"inp']) {
      await new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(raw));
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
        socket.resume();
        setTimeout(() => socket.destroy(), 200);
      });
    }
    expect((await call(port, 'GET', '/v2/health/live')).status).toBe(200);
    expect((await infer(X([1, 4], [1, 2, 3, 4]))).status).toBe(200);
  });

  test('a client that disconnects while queued is taken out of the queue', async () => {
    const hold = gate();
    const host = gatedHost(hold, { maxBatchSize: 1 });
    const s = createInferenceServer({ models: { gated: host } });
    const { port: p } = await s.listen(0);
    try {
      const running = call(p, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      await waitFor(() => host.stats.running === 1);
      const body = JSON.stringify(gatedBody());
      const socket = connect(p, '127.0.0.1', () => socket.write(`POST /v2/models/gated/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`));
      socket.on('error', () => undefined);
      await waitFor(() => host.stats.queued === 1);
      socket.destroy();
      await waitFor(() => host.stats.queued === 0);
      expect(host.stats.rejected.aborted).toBe(1);
      hold.open();
      expect((await running).status).toBe(200);
    } finally {
      hold.open();
      await s.close();
    }
  });
});
