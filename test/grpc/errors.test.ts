import { createInferenceServer, type InferenceServer } from '../../src/http';
import { createGrpcServer, createServingCore, GRPC_STATUS, REASON_KEY, type GrpcServer, type ServingCore } from '../../src/grpc';
import { call, gate, gatedHost } from '../http/helpers';
import { connect, f32Bytes, failure, grpc, type Client, type Message } from './client';

// Every failure maps to its gRPC status with REST's message (the same core serves both), and the
// reason REST puts in `code` travels in the trailing metadata.

let core: ServingCore;
let server: GrpcServer;
let http: InferenceServer;
let client: Client;
let httpPort: number;
let giveUp: (e: Error) => void = () => undefined;
const open = gate();
const failing = gatedHost(open, { name: 'failing', fail: new Error('the batch broke') });
open.open();

beforeAll(async () => {
  core = createServingCore({ models: { gated: gatedHost(open), failing, later: new Promise<never>((_, reject) => (giveUp = reject)) } });
  server = createGrpcServer({ core });
  http = createInferenceServer({ core });
  client = connect((await server.listen(0)).port);
  httpPort = (await http.listen(0)).port;
});
afterAll(async () => {
  giveUp(new Error('never loads')); // so that closing the core need not wait for it
  client.close();
  await Promise.all([server.close({ timeoutMs: 1000 }), http.close({ timeoutMs: 1000 })]);
  await core.close({ drain: false });
});

const x = (data: number[], shape = [1, 2], datatype = 'FP32'): Message => ({ name: 'X', datatype, shape, contents: { fp32_contents: data } });

/** The REST answer's error and code for the same request as JSON. */
async function rest(model: string, version: string | undefined, body: unknown): Promise<{ status: number; error: string; code: string }> {
  const r = await call(httpPort, 'POST', `/v2/models/${model}${version === undefined ? '' : `/versions/${version}`}/infer`, { body });
  return { status: r.status, ...r.json() };
}

test.each([
  ['an unknown model', { model_name: 'nope', inputs: [x([1, 2])] }, 'NOT_FOUND', 'model_not_found', 'no model named "nope"; the served models are "gated", "failing", "later"'],
  ['an unknown version', { model_name: 'gated', model_version: '7', inputs: [x([1, 2])] }, 'NOT_FOUND', 'model_version_not_found', 'model "gated" has no version "7"; its version is "1"'],
  ['a wrong datatype', { model_name: 'gated', inputs: [{ ...x([]), datatype: 'INT32', contents: { int_contents: [1, 2] } }] }, 'INVALID_ARGUMENT', 'wrong_datatype', 'input "X": expected datatype FP32, got INT32'],
  ['a wrong shape', { model_name: 'gated', inputs: [x([1, 2, 3], [1, 3])] }, 'INVALID_ARGUMENT', 'wrong_shape', 'input "X": expected dims [N, 2], got shape [1, 3] (axis 1 must be 2)'],
  ['a missing input', { model_name: 'gated', inputs: [{ ...x([1]), name: 'Z' }] }, 'INVALID_ARGUMENT', 'unknown_input', 'input "Z" is not an input of model "gated"; its inputs are "X"'],
  ['no inputs', { model_name: 'gated' }, 'INVALID_ARGUMENT', 'invalid_request', 'the request must have a non-empty "inputs" array; model "gated" takes "X"'],
  ['too few elements', { model_name: 'gated', inputs: [x([1])] }, 'INVALID_ARGUMENT', 'data_length', 'input "X" (shape [1, 2]): expected 2 data elements (the product of the shape), got 1'],
  ['a model still loading', { model_name: 'later', inputs: [x([1, 2])] }, 'UNAVAILABLE', 'model_loading', 'model "later" is still loading'],
  ['a model that throws', { model_name: 'failing', inputs: [x([1, 2])] }, 'INTERNAL', 'model_error', 'the model failed: the batch broke'],
] as Array<[string, Message, string, string, string]>)('%s: the gRPC status of its serving code, with the REST message and code', async (_what, request, status, reason, message) => {
  const e = await failure(client.unary('ModelInfer', request));
  expect(grpc.status[e.code]).toBe(status);
  expect(e.details).toBe(message);
  expect(e.metadata.get(REASON_KEY)).toEqual([reason]);
  // The same request as REST JSON gets the same message and code.
  const json = { inputs: (request.inputs ?? []).map((t: Message) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: Object.values(t.contents).flat() })) };
  const r = await rest(request.model_name, request.model_version, json);
  expect({ error: r.error, code: r.code }).toEqual({ error: message, code: reason });
});

test.each([
  ['more raw entries than inputs', { inputs: [x([])], raw_input_contents: [f32Bytes([1, 2]), f32Bytes([3])] }, 'raw_input_contents has 2 entries, but the request has 1 inputs; send one entry per input, in the order of inputs'],
  ['raw and typed together', { inputs: [x([1, 2])], raw_input_contents: [f32Bytes([1, 2])] }, 'input "X" has typed contents, but the request also has raw_input_contents; send each input one way: all raw, or all typed'],
  ['a raw byte count off', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [f32Bytes([1, 2]).subarray(0, 7)] }, 'input "X" (shape [1, 2]): expected 8 bytes of binary data (2 elements × 4 bytes of FP32), got 7'],
  ['elements in another datatype\'s field', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], contents: { fp64_contents: [1, 2] } }] }, 'input "X": datatype FP32 takes its elements in contents.fp32_contents, but the request filled contents.fp64_contents'],
  ['typed FP16', { inputs: [{ name: 'X', datatype: 'FP16', shape: [1, 2], contents: {} }] }, 'input "X": FP16 has no field in InferTensorContents; send its bytes in raw_input_contents'],
  ['a negative dimension', { inputs: [{ name: 'X', datatype: 'FP32', shape: [-1, 2] }], raw_input_contents: [f32Bytes([1, 2])] }, 'input "X": "shape" must be an array of non-negative integers, got [-1,2]'],
])('gRPC-only misuse: %s → INVALID_ARGUMENT naming it', async (_what, request, message) => {
  const e = await failure(client.unary('ModelInfer', { model_name: 'gated', ...request }));
  expect(e.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(e.details).toBe(message);
});

test('the metadata RPCs: NOT_FOUND for an unknown model or version, with the REST message', async () => {
  for (const rpc of ['ModelReady', 'ModelMetadata', 'ModelConfig', 'ModelStatistics']) {
    const e = await failure(client.unary(rpc, { name: 'nope' }));
    expect([rpc, e.code, e.details]).toEqual([rpc, grpc.status.NOT_FOUND, 'no model named "nope"; the served models are "gated", "failing", "later"']);
    const v = await failure(client.unary(rpc, { name: 'gated', version: '2' }));
    expect([rpc, v.code, v.details]).toEqual([rpc, grpc.status.NOT_FOUND, 'model "gated" has no version "2"; its version is "1"']);
  }
  expect((await call(httpPort, 'GET', '/v2/models/nope')).json().error).toBe('no model named "nope"; the served models are "gated", "failing", "later"');
});

test('ModelReady of a model still loading is false; ServerReady is false until every model loads', async () => {
  expect(await client.unary('ModelReady', { name: 'later' })).toEqual({ ready: false });
  expect(await client.unary('ServerReady', {})).toEqual({ ready: false });
});

test('an RPC the server does not implement answers UNIMPLEMENTED', async () => {
  const e = await failure(
    new Promise((resolve, reject) =>
      client.raw.makeUnaryRequest('/inference.GRPCInferenceService/RepositoryIndex', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), (err, res) => (err ? reject(err) : resolve(res))),
    ),
  );
  expect(e.code).toBe(grpc.status.UNIMPLEMENTED);
});

test('a ModelInfer message that is not protobuf is refused (grpc-js answers INTERNAL for any undecodable message) and the server goes on', async () => {
  const e = await failure(
    new Promise((resolve, reject) =>
      client.raw.makeUnaryRequest('/inference.GRPCInferenceService/ModelInfer', (b: Buffer) => b, (b: Buffer) => b, Buffer.from([0x0a, 0xff, 0xff, 0x7f]), (err, res) => (err ? reject(err) : resolve(res))),
    ),
  );
  expect(e.code).toBe(grpc.status.INTERNAL);
  expect(e.details).toMatch(/^Error deserializing request/);
  expect(await client.unary('ServerLive', {})).toEqual({ live: true });
});

test('GRPC_STATUS maps every serving code to the gRPC status of the same name', () => {
  for (const [code, status] of Object.entries(GRPC_STATUS)) expect([code, grpc.status[status]]).toEqual([code, code.toUpperCase().replace('-', '_')]);
});
