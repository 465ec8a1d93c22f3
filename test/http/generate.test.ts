import { request } from 'node:http';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { createInferenceServer, type GeneratorEntry } from '../../src/http';
import { HostStoppedError } from '../../src/core/errors';
import { GenerationHost } from '../../src/generate/generation-host';
import { DecoderBatcher, type DecoderState } from '../../src/generate/decoder-batcher';
import type { StepInput } from '../../src/generate/options';
import { ControlledModel, settle, track } from '../support/controlled-model';
import { waitFor } from '../support/wait-for';
import { recurrentDecoderModel } from '../../examples/support/decoder-models';
import { recurrentAlone } from '../support/greedy-alone';
import { call, modelFiles } from './helpers';
import { createOnnxHost } from '../../src/onnx';

// Triton's generate extension on a GenerationHost: one JSON answer, or Server-Sent Events as the
// tokens come; errors before the first token as ordinary error answers, after it as a last event.

type In = StepInput<number>;

/** Counts up from the last token; 9 is the stop token when asked for. */
const counting = () => new GenerationHost(async (xs: readonly In[]) => xs.map((x) => ({ token: x.token + 1, state: 0 })), { maxBatchSize: 4, initialState: () => 0, name: 'counter' });

/** A toy tokenizer: one token per character, 'a' = 0. */
const letters = { encode: (text: string) => [...text].map((c) => c.charCodeAt(0) - 97), decode: (ids: readonly number[]) => String.fromCharCode(...ids.map((i) => i + 97)) };

/** The `data:` events of an SSE body, parsed. */
function events(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => JSON.parse(e.slice('data: '.length)) as Record<string, unknown>);
}

async function serve(generators: Parameters<typeof createInferenceServer>[0]['generators'], models: Parameters<typeof createInferenceServer>[0]['models'] = {}) {
  const s = createInferenceServer({ models, generators });
  const { port } = await s.listen(0);
  return { s, port };
}

test('POST /generate: all tokens in one JSON answer, with the finish reason; text in and out with a tokenizer', async () => {
  const { s, port } = await serve({ counter: { host: counting(), tokenizer: letters } });
  try {
    const r = await call(port, 'POST', '/v2/models/counter/generate', { body: { input_ids: [1, 2], parameters: { max_tokens: 3 } } });
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ model_name: 'counter', model_version: '1', output_ids: [3, 4, 5], text_output: 'def', finish_reason: 'length' });
    const t = await call(port, 'POST', '/v2/models/counter/versions/1/generate', { body: { text_input: 'ab', parameters: { max_tokens: 4, stop_token_ids: [4] } } });
    expect(t.json()).toMatchObject({ output_ids: [2, 3, 4], text_output: 'cde', finish_reason: 'stop' });
  } finally {
    await s.close();
  }
});

test('POST /generate_stream: one event per token as it comes, then one with the finish reason', async () => {
  const { s, port } = await serve({ counter: { host: counting(), tokenizer: letters } });
  try {
    const r = await call(port, 'POST', '/v2/models/counter/generate_stream', { body: { input_ids: [0], parameters: { max_tokens: 3 } } });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(events(r.text)).toEqual([
      { model_name: 'counter', model_version: '1', output_ids: [1], text_output: 'b' },
      { model_name: 'counter', model_version: '1', output_ids: [2], text_output: 'c' },
      { model_name: 'counter', model_version: '1', output_ids: [3], text_output: 'd' },
      { model_name: 'counter', model_version: '1', output_ids: [], finish_reason: 'length' },
    ]);
  } finally {
    await s.close();
  }
});

test('the events leave as each step finishes, not at the end', async () => {
  const model = new ControlledModel<In, { token: number; state: number }>();
  const host = new GenerationHost(model.fn, { maxBatchSize: 2, initialState: () => 0 });
  const { s, port } = await serve({ slow: host });
  try {
    let received = '';
    const done = new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v2/models/slow/generate_stream', headers: { 'Content-Type': 'application/json' } }, (res) => {
        res.on('data', (c: Buffer) => (received += c.toString()));
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end(JSON.stringify({ input_ids: [5], parameters: { max_tokens: 2 } }));
    });
    await waitFor(() => model.calls.length === 1, 10_000, 'the first step');
    model.answer(0, (x) => ({ token: x.token + 1, state: 0 }));
    await waitFor(() => events(received).length === 1, 10_000, 'the first event before the second step ran');
    expect(model.calls).toHaveLength(2);
    model.answer(1, (x) => ({ token: x.token + 1, state: 0 }));
    await done;
    expect(events(received).map((e) => e.output_ids)).toEqual([[6], [7], []]);
  } finally {
    await s.close();
  }
});

test('a client that disconnects mid-stream aborts its sequence: its slot is freed and the next request runs', async () => {
  const model = new ControlledModel<In, { token: number; state: number }>();
  const host = new GenerationHost(model.fn, { maxBatchSize: 1, initialState: () => 0 });
  const { s, port } = await serve({ slow: host });
  try {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v2/models/slow/generate_stream', headers: { 'Content-Type': 'application/json' } }, (res) => {
      res.once('data', () => req.destroy()); // the first event came: leave
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ input_ids: [1] }));
    await waitFor(() => model.calls.length === 1, 10_000, 'the first step');
    model.answer(0, (x) => ({ token: x.token + 1, state: 0 }));
    await waitFor(() => host.stats.sequences.aborted === 1, 10_000, 'the abort');
    // The step running when it left ends; then the slot is free.
    await waitFor(() => model.calls.length === 2, 10_000, 'the second step');
    model.answer(1, (x) => ({ token: x.token + 1, state: 0 }));
    const next = call(port, 'POST', '/v2/models/slow/generate', { body: { input_ids: [7], parameters: { max_tokens: 1 } } });
    await waitFor(() => model.calls.length === 3, 10_000, 'the next request\'s step');
    expect(model.calls[2]!.items.map((i) => i.token)).toEqual([7]);
    model.answer(2, (x) => ({ token: x.token + 1, state: 0 }));
    expect((await next).json()).toMatchObject({ output_ids: [8] });
  } finally {
    await settle();
    await s.close({ drain: false });
  }
});

test('errors: bad requests are 400 naming the problem; a full queue 503; a deadline 504; after the first token, a last error event', async () => {
  const model = new ControlledModel<In, { token: number; state: number }>();
  const host = new GenerationHost(model.fn, { maxBatchSize: 1, maxQueueSize: 1, initialState: () => 0 });
  const { s, port } = await serve({ g: host, counter: counting() });
  const post = (path: string, body: unknown) => call(port, 'POST', path, { body });
  try {
    const cases: Array<[unknown, string]> = [
      [{}, 'a generate request needs "input_ids" (token ids)'],
      [{ input_ids: [] }, "the prompt is empty: send at least one token (your model's begin-of-sequence token)"],
      [{ input_ids: [1, -2] }, '"input_ids" must hold token ids (integers from 0 up), got -2 (number) at index 1'],
      [{ text_input: 'hi' }, 'this model has no tokenizer, so it takes "input_ids" (token ids), not "text_input"'],
      [{ input_ids: [1], parameters: { max_tokenz: 2 } }, 'unknown parameter "max_tokenz"; the known parameters are "max_tokens", "stop_token_ids", "priority", "timeout_ms"'],
      [{ input_ids: [1], parameters: { max_tokens: 0 } }, 'parameters.max_tokens must be an integer from 1 up, got 0 (number)'],
      [{ input_ids: [1], prompt: 'x' }, 'unknown field "prompt" in a generate request; the fields are "input_ids" or "text_input", "parameters" and "id"'],
      [[1, 2], 'a generate request is a JSON object { "input_ids" | "text_input", "parameters"? }, got an array of length 2'],
      [{ input_ids: [1], text_input: 'b' }, 'send "input_ids" or "text_input", not both'],
      [{ input_ids: 'abc' }, '"input_ids" must be an array of token ids, got "abc" (string)'],
      [{ input_ids: [1], id: 42 }, '"id" must be a string, got 42 (number)'],
      [{ input_ids: [1], parameters: [] }, '"parameters" must be an object, got an array of length 0'],
      [{ input_ids: [1], parameters: { priority: 'high' } }, 'parameters.priority must be a finite number, got "high" (string)'],
      [{ input_ids: [1], parameters: { timeout_ms: 1.5 } }, 'parameters.timeout_ms must be an integer from 1 up, got 1.5 (number)'],
      [{ input_ids: [1], parameters: { stop_token_ids: [0.5] } }, '"parameters.stop_token_ids" must hold token ids (integers from 0 up), got 0.5 (number) at index 0'],
    ];
    for (const [body, message] of cases) {
      for (const route of ['generate', 'generate_stream']) {
        const r = await post(`/v2/models/counter/${route}`, body);
        expect({ status: r.status, type: r.headers['content-type'], error: r.json().error }).toEqual({ status: 400, type: 'application/json', error: message });
      }
    }
    const notJson = await call(port, 'POST', '/v2/models/counter/generate', { body: '{"input_ids": [1', headers: { 'Content-Type': 'application/json' } });
    expect({ status: notJson.status, code: notJson.json().code }).toEqual({ status: 400, code: 'invalid_json' });
    const get = await call(port, 'GET', '/v2/models/counter/generate_stream');
    expect({ status: get.status, allow: get.headers.allow }).toEqual({ status: 405, allow: 'POST' });
    expect((await post('/v2/models/counter/infer', { inputs: [] })).json()).toEqual({
      code: 'not_a_batching_model',
      error: 'model "counter" is a generative model: send its requests to POST /v2/models/counter/generate or /generate_stream (POST /v2/models/counter/infer is for batching models)',
    });
    expect((await call(port, 'GET', '/v2/models/counter/config')).json()).toMatchObject({ code: 'not_a_batching_model' });
    expect((await post('/v2/models/nope/generate', { input_ids: [1] })).json()).toEqual({ code: 'model_not_found', error: 'no model named "nope"; the served models are "g", "counter"' });
    expect((await call(port, 'GET', '/v2/models/nope')).json()).toEqual({ code: 'model_not_found', error: 'no model named "nope"; the served models are "g", "counter"' });
    expect((await post('/v2/models/counter/versions/2/generate', { input_ids: [1] })).json()).toEqual({
      code: 'model_version_not_found',
      error: 'model "counter" has no version "2"; its version is "1"',
    });

    // g: one slot busy, one prompt waiting, the third is refused.
    const first = post('/v2/models/g/generate_stream', { input_ids: [1], parameters: { max_tokens: 3 } });
    await waitFor(() => model.calls.length === 1, 10_000, 'the first step');
    const second = post('/v2/models/g/generate', { input_ids: [2], parameters: { timeout_ms: 50 } });
    await waitFor(() => host.stats.waiting === 1, 10_000, 'the second waiting');
    const full = await post('/v2/models/g/generate', { input_ids: [3] });
    expect({ status: full.status, code: full.json().code, retry: full.headers['retry-after'] }).toEqual({ status: 503, code: 'queue_full', retry: '1' });
    const late = await second;
    expect({ status: late.status, code: late.json().code }).toEqual({ status: 504, code: 'deadline_exceeded' });
    model.answer(0, (x) => ({ token: x.token + 1, state: 0 }));
    await waitFor(() => model.calls.length === 2, 10_000, 'the second step');
    model.last.reject(new Error('the GPU fell over'));
    const broken = await first;
    expect(broken.status).toBe(200); // the status went out with the first token
    expect(events(broken.text)).toEqual([
      { model_name: 'g', model_version: '1', output_ids: [2] },
      { error: 'the model failed: the GPU fell over', code: 'model_error' },
    ]);
  } finally {
    await s.close({ drain: false });
  }
});

test('metadata, ready, the model list and readiness include generators beside batching models; names may not clash', async () => {
  const files = modelFiles();
  const lin = await createOnnxHost(files.linear, { maxBatchSize: 2, session: { intraOpNumThreads: 1 } });
  const { s, port } = await serve({ counter: counting() }, { lin });
  try {
    expect((await call(port, 'GET', '/v2/models/counter')).json()).toEqual({
      name: 'counter',
      versions: ['1'],
      platform: 'microbatch_generation',
      max_batch_size: null,
      inputs: [{ name: 'input_ids', datatype: 'INT64', shape: [-1], dims: ['T'], batch_axis: 'shared' }],
      outputs: [{ name: 'output_ids', datatype: 'INT64', shape: [-1], dims: ['T'], batch_axis: 'shared' }],
    });
    expect((await call(port, 'GET', '/v2/models/counter/ready')).json()).toEqual({ name: 'counter', ready: true });
    expect((await call(port, 'GET', '/v2/models')).json()).toEqual({
      models: [
        { name: 'lin', versions: ['1'], state: 'ready' },
        { name: 'counter', versions: ['1'], state: 'ready' },
      ],
    });
    expect((await call(port, 'GET', '/v2/health/ready')).json()).toMatchObject({ ready: true, models: { lin: 'ready', counter: 'ready' } });
    // Triton's own server leaves the generate extension out of its `extensions`, so clients do not look for it there.
    expect((await call(port, 'GET', '/v2')).json().extensions).toEqual(['binary_tensor_data', 'model_configuration', 'statistics']);
    expect((await call(port, 'POST', '/v2/models/lin/generate', { body: { input_ids: [1] } })).json()).toEqual({
      code: 'not_a_generator',
      error: 'model "lin" is not a generative model; send its requests to POST /v2/models/lin/infer',
    });
  } finally {
    await s.close();
    files.cleanup();
  }
  expect(() => createInferenceServer({ models: { x: lin }, generators: { x: counting() } })).toThrow(
    new TypeError('createInferenceServer: "x" is both in `models` and in `generators`; a name serves one model'),
  );
  expect(() => createInferenceServer({ models: {}, generators: { x: {} as never } })).toThrow(
    new TypeError('createInferenceServer: generator "x" must be a GenerationHost (with generate() and stop()), { host, tokenizer? }, or a promise of either; got an object'),
  );
  expect(() => createInferenceServer({ models: {} })).toThrow(/with at least one model \(or `generators` with one\)/);
});

test('the request\'s "id" comes back in the answer and in every event', async () => {
  const { s, port } = await serve({ counter: counting() });
  try {
    const r = await call(port, 'POST', '/v2/models/counter/generate', { body: { id: '42', input_ids: [1], parameters: { max_tokens: 2 } } });
    expect(r.json()).toEqual({ id: '42', model_name: 'counter', model_version: '1', output_ids: [2, 3], finish_reason: 'length' });
    const st = await call(port, 'POST', '/v2/models/counter/versions/1/generate_stream', { body: { id: 'a-7', input_ids: [1], parameters: { max_tokens: 1 } } });
    expect(events(st.text)).toEqual([
      { id: 'a-7', model_name: 'counter', model_version: '1', output_ids: [2] },
      { id: 'a-7', model_name: 'counter', model_version: '1', output_ids: [], finish_reason: 'length' },
    ]);
  } finally {
    await s.close();
  }
});

test('a stopped generator answers 503 model_stopped with Retry-After, on both routes', async () => {
  const host = counting();
  const { s, port } = await serve({ counter: host });
  try {
    await host.stop();
    for (const route of ['generate', 'generate_stream']) {
      const r = await call(port, 'POST', `/v2/models/counter/${route}`, { body: { input_ids: [1] } });
      expect({ status: r.status, retry: r.headers['retry-after'], body: r.json() }).toEqual({
        status: 503,
        retry: '1',
        body: { code: 'model_stopped', error: expect.stringMatching(/stopped/) },
      });
    }
  } finally {
    await s.close();
  }
});

test('close() lets a running stream finish, then stops the generator draining', async () => {
  const model = new ControlledModel<In, { token: number; state: number }>();
  const host = new GenerationHost(model.fn, { maxBatchSize: 1, initialState: () => 0 });
  const { s, port } = await serve({ slow: host });
  const reply = call(port, 'POST', '/v2/models/slow/generate_stream', { body: { input_ids: [1], parameters: { max_tokens: 2 } } });
  await waitFor(() => model.calls.length === 1, 10_000, 'the first step');
  const closed = track(s.close());
  expect(s.ready).toBe(false);
  model.answer(0, (x) => ({ token: x.token + 1, state: 0 }));
  await waitFor(() => model.calls.length === 2, 10_000, 'the second step');
  expect(closed.state).toBe('pending');
  model.answer(1, (x) => ({ token: x.token + 1, state: 0 }));
  expect(events((await reply).text).map((e) => e.output_ids ?? e.error)).toEqual([[2], [3], []]);
  await s.close();
  await expect(host.generate([1]).collect()).rejects.toThrow(HostStoppedError);
});

test('a generator given as a promise loads in the background: 503 model_loading until it resolves; one that fails is model_unavailable', async () => {
  let resolve!: (g: GeneratorEntry) => void;
  const later = new Promise<GeneratorEntry>((r) => (resolve = r));
  const { s, port } = await serve({ later, broken: Promise.reject(new Error('no such file: writer.onnx')), junk: Promise.resolve({} as GeneratorEntry) });
  const list = async () => (await call(port, 'GET', '/v2/models')).json().models as Array<{ name: string; state: string }>;
  try {
    await waitFor(async () => (await list()).every((m) => m.name === 'later' || m.state === 'failed'), 10_000, 'the failed loads');
    expect(await list()).toEqual([
      { name: 'later', versions: [], state: 'loading' },
      { name: 'broken', versions: [], state: 'failed' },
      { name: 'junk', versions: [], state: 'failed' },
    ]);
    const loading = await call(port, 'POST', '/v2/models/later/generate', { body: { input_ids: [1] } });
    expect({ status: loading.status, retry: loading.headers['retry-after'], body: loading.json() }).toEqual({
      status: 503,
      retry: '1',
      body: { code: 'model_loading', error: 'model "later" is still loading' },
    });
    expect((await call(port, 'GET', '/v2/models/later')).status).toBe(503);
    const notReady = await call(port, 'GET', '/v2/models/later/ready');
    expect({ status: notReady.status, body: notReady.json() }).toEqual({ status: 503, body: { name: 'later', ready: false } });
    const health = await call(port, 'GET', '/v2/health/ready');
    expect({ status: health.status, models: health.json().models }).toEqual({ status: 503, models: { later: 'loading', broken: 'failed', junk: 'failed' } });
    expect((await call(port, 'POST', '/v2/models/broken/generate_stream', { body: { input_ids: [1] } })).json()).toEqual({
      code: 'model_unavailable',
      error: 'model "broken" failed to load: no such file: writer.onnx',
    });
    expect((await call(port, 'POST', '/v2/models/junk/generate', { body: { input_ids: [1] } })).json()).toEqual({
      code: 'model_unavailable',
      error: 'model "junk" failed to load: generator "junk" resolved to an object, not a GenerationHost (with generate() and stop()) or { host, tokenizer? }',
    });

    resolve({ host: counting(), tokenizer: letters });
    await waitFor(async () => (await call(port, 'GET', '/v2/models/later/ready')).status === 200, 10_000, 'the generator loaded');
    const r = await call(port, 'POST', '/v2/models/later/generate', { body: { text_input: 'a', parameters: { max_tokens: 2 } } });
    expect(r.json()).toEqual({ model_name: 'later', model_version: '1', output_ids: [1, 2], text_output: 'bc', finish_reason: 'length' });
  } finally {
    await s.close();
  }
});

test('a real ONNX decoder over HTTP: concurrent streamed callers get the tokens of greedy decoding alone', async () => {
  const H = 8;
  const session = await InferenceSession.create(recurrentDecoderModel(), { intraOpNumThreads: 1 });
  const tensor = (type: string, data: unknown, dims: readonly number[]) => new Tensor(type as Tensor.Type, data as Tensor.DataType, dims);
  const host = new GenerationHost<DecoderState<Tensor>, Record<string, Tensor>, Readonly<Record<string, Tensor>>>((feeds) => session.run(feeds), {
    maxBatchSize: 4,
    batcher: new DecoderBatcher<Tensor>({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor }),
    initialState: () => ({ state: new Tensor('float32', new Float32Array(H), [1, H]) }),
  });
  const { s, port } = await serve({ decoder: host });
  try {
    const prompts = [[3], [5, 1], [11, 2, 9]];
    const replies = await Promise.all(prompts.map((p) => call(port, 'POST', '/v2/models/decoder/generate_stream', { body: { input_ids: p, parameters: { max_tokens: 6 } } })));
    prompts.forEach((p, i) => expect(events(replies[i]!.text).flatMap((e) => e.output_ids as number[])).toEqual(recurrentAlone(p, 6)));
  } finally {
    await s.close();
    await session.release();
  }
});
