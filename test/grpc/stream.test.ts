import { createGrpcServer, type GrpcServer } from '../../src/grpc';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput } from '../../src/generate/options';
import { gate, gatedHost } from '../http/helpers';
import { waitFor } from '../support/wait-for';
import { collect, connect, failure, grpc, type Client, type Message } from './client';

// ModelStreamInfer (Triton's decoupled streaming): one response per token for a generator, one
// per request for a batching model, errors as error_message on a stream that stays open.

type In = StepInput<number>;

/** Counts up from the last token. */
const counting = (): GenerationHost<number> => new GenerationHost(async (xs: readonly In[]) => xs.map((x) => ({ token: x.token + 1, state: 0 })), { maxBatchSize: 4, initialState: () => 0, name: 'counter' });
/** A toy tokenizer: one token per character, 'a' = 0. */
const letters = { encode: (text: string) => [...text].map((c) => c.charCodeAt(0) - 97), decode: (ids: readonly number[]) => String.fromCharCode(...ids.map((i) => i + 97)) };

let server: GrpcServer;
let client: Client;
let counter: GenerationHost<number>;
const hold = gate();
hold.open();

beforeAll(async () => {
  counter = counting();
  server = createGrpcServer({ models: { gated: gatedHost(hold) }, generators: { counter: { host: counter, tokenizer: letters }, plain: counting() } });
  client = connect((await server.listen(0)).port);
});
afterAll(async () => {
  client.close();
  await server.close();
});

const ids = (values: number[]): Message => ({ name: 'input_ids', datatype: 'INT64', shape: [values.length], contents: { int64_contents: values.map(String) } });
const final = (m: Message): boolean => m.infer_response.parameters.triton_final_response?.bool_param === true;

/** Sends `requests` on one stream, half-closes it, and returns every message. */
async function exchange(requests: Message[]): Promise<Message[]> {
  const stream = client.stream();
  const all = collect(stream);
  for (const r of requests) stream.write(r);
  stream.end();
  return all;
}

test('a generator: one response per token, then a final one with the finish reason; the id echoed', async () => {
  const messages = await exchange([{ model_name: 'counter', id: 'g1', inputs: [ids([1, 2])], parameters: { max_tokens: { int64_param: 3 } } }]);
  expect(messages.map((m) => m.error_message)).toEqual(['', '', '', '']);
  const tokens = messages.slice(0, 3).map((m) => m.infer_response);
  expect(tokens.map((r) => [r.model_name, r.model_version, r.id])).toEqual(Array(3).fill(['counter', '1', 'g1']));
  expect(tokens.map((r) => r.outputs.map((o: Message) => [o.name, o.datatype, o.shape, o.contents.int64_contents.length > 0 ? o.contents.int64_contents : o.contents.bytes_contents.map(String)]))).toEqual([
    [['output_ids', 'INT64', ['1'], ['3']], ['text_output', 'BYTES', ['1'], ['d']]],
    [['output_ids', 'INT64', ['1'], ['4']], ['text_output', 'BYTES', ['1'], ['e']]],
    [['output_ids', 'INT64', ['1'], ['5']], ['text_output', 'BYTES', ['1'], ['f']]],
  ]);
  expect(messages.map(final)).toEqual([false, false, false, true]);
  const last = messages[3]!.infer_response;
  expect([last.outputs, last.parameters.finish_reason.string_param, last.id]).toEqual([[], 'length', 'g1']);
});

test('a generator: text_input with a tokenizer, stop_token_ids as an input, raw in and raw out', async () => {
  const text = Buffer.concat([Buffer.from([2, 0, 0, 0]), Buffer.from('ab')]);
  const stop = Buffer.from(BigInt64Array.of(4n).buffer);
  const messages = await exchange([
    {
      model_name: 'counter',
      inputs: [
        { name: 'text_input', datatype: 'BYTES', shape: [1] },
        { name: 'stop_token_ids', datatype: 'INT64', shape: [1] },
      ],
      raw_input_contents: [text, stop],
      parameters: { max_tokens: { int64_param: 5 } },
    },
  ]);
  const tokens = messages.filter((m) => !final(m)).map((m) => m.infer_response);
  expect(tokens.map((r) => Number(new BigInt64Array(new Uint8Array(r.raw_output_contents[0]).buffer)[0]))).toEqual([2, 3, 4]);
  expect(tokens.map((r) => Buffer.from(r.raw_output_contents[1]).subarray(4).toString())).toEqual(['c', 'd', 'e']);
  expect(messages.at(-1)!.infer_response.parameters.finish_reason.string_param).toBe('stop');
});

test('a batching model on the stream: one response per request, in request order, batched together', async () => {
  const row = (id: string, a: number): Message => ({ model_name: 'gated', id, inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [a, a] } }] });
  const messages = await exchange([row('a', 1), row('b', 2), row('c', 3)]);
  expect(messages.map((m) => [m.error_message, m.infer_response.id, m.infer_response.outputs[0].contents.fp32_contents])).toEqual([
    ['', 'a', [2, 2]],
    ['', 'b', [4, 4]],
    ['', 'c', [6, 6]],
  ]);
});

test('a failing request answers error_message with the REST message; the stream goes on', async () => {
  const messages = await exchange([
    { model_name: 'nope', id: 'x', inputs: [ids([1])] },
    { model_name: 'plain', id: 'y', inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('a')] } }] },
    { model_name: 'plain', id: 'z', inputs: [ids([1])], parameters: { max_tokens: { int64_param: 1 } } },
  ]);
  expect(messages.map((m) => [m.infer_response.id, m.error_message])).toEqual([
    ['x', 'no model named "nope"; the served models are "gated", "counter", "plain"'],
    ['y', 'this model has no tokenizer, so it takes "input_ids" (token ids), not "text_input"'],
    ['z', ''],
    ['z', ''],
  ]);
});

test('unknown generate parameters and inputs are refused by name, as over REST', async () => {
  const messages = await exchange([
    { model_name: 'plain', inputs: [ids([1])], parameters: { temperature: { double_param: 0.5 } } },
    { model_name: 'plain', inputs: [ids([1]), { name: 'mask', datatype: 'INT64', shape: [1], contents: { int64_contents: ['1'] } }] },
  ]);
  expect(messages.map((m) => m.error_message)).toEqual([
    'unknown parameter "temperature"; the known parameters are "max_tokens", "stop_token_ids", "priority", "timeout_ms"',
    'unknown field "mask" in a generate request; the fields are "input_ids" or "text_input", "parameters" and "id"',
  ]);
});

test('cancelling the stream aborts the sequences running on it', async () => {
  const stream = client.stream();
  const errors = new Promise<number>((resolve) => stream.on('error', (e: grpc.ServiceError) => resolve(e.code)));
  let seen = 0;
  stream.on('data', () => seen++);
  stream.write({ model_name: 'counter', inputs: [ids([0])], parameters: { max_tokens: { int64_param: 1_000_000 } } });
  await waitFor(() => seen > 3);
  stream.cancel();
  expect(await errors).toBe(grpc.status.CANCELLED);
  await waitFor(() => counter.stats.running === 0); // the sequence freed its slot
  expect(counter.stats.tokens).toBeLessThan(1_000_000);
});

test('closing the server ends idle streams; a stream with a request running ends after its answer', async () => {
  const held = gate();
  const s = createGrpcServer({ models: { gated: gatedHost(held) } });
  const c = connect((await s.listen(0)).port);
  try {
    const idle = c.stream();
    const idleEnded = collect(idle);
    const busy = c.stream();
    const busyAll = collect(busy);
    busy.write({ model_name: 'gated', id: 'slow', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [1, 2] } }] });
    idle.write({ model_name: 'gated', id: 'quick', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [1, 2] } }] });
    await new Promise((r) => setTimeout(r, 100));
    const closed = s.close({ timeoutMs: 10_000 });
    held.open();
    expect((await idleEnded).map((m) => m.infer_response.id)).toEqual(['quick']);
    expect((await busyAll).map((m) => m.infer_response.id)).toEqual(['slow']);
    await closed;
  } finally {
    held.open();
    c.close();
  }
});

test("a generator over ModelInfer is refused as over REST; its metadata and readiness answer", async () => {
  const e = await failure(client.unary('ModelInfer', { model_name: 'counter', inputs: [ids([1])] }));
  expect([grpc.status[e.code], e.details]).toEqual(['INVALID_ARGUMENT', 'model "counter" is a generative model: send its requests to its generate route (POST /v2/models/counter/generate or /generate_stream; gRPC ModelStreamInfer)']);
  const meta = await client.unary('ModelMetadata', { name: 'counter' });
  expect(meta).toMatchObject({ name: 'counter', platform: 'microbatch_generation', inputs: [{ name: 'input_ids', datatype: 'INT64', shape: ['-1'] }], properties: {} });
  expect(await client.unary('ModelReady', { name: 'counter' })).toEqual({ ready: true });
});
