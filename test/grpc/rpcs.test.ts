import { createOnnxHost, type OnnxHost } from '../../src/onnx';
import { createInferenceServer, type InferenceServer, type ServableModel } from '../../src/http';
import { createGrpcServer, createServingCore, INFERENCE_PROTO, type GrpcServer, type ServingCore } from '../../src/grpc';
import { ModelHost } from '../../src/engine/model-host';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { packageVersion } from '../../src/core/package-version';
import { int64Reference, linearReference, multiIoReference } from '../support/onnx-models';
import { call, modelFiles } from '../http/helpers';
import { connect, f32Bytes, f32Values, type Client } from './client';

// Every RPC of the service over a real grpc-js client and the shipped .proto, on real onnxruntime
// models, with one core served by HTTP as well: the same input gets the same answer over both.

let files: ReturnType<typeof modelFiles>;
let linear: OnnxHost;
let multi: OnnxHost;
let int64: OnnxHost;
let core: ServingCore;
let grpcServer: GrpcServer;
let http: InferenceServer;
let client: Client;
let httpPort: number;

type Feeds = Record<string, TensorLike>;

/** A BYTES model: each text in, its length (INT32) and its upper case (BYTES) out. */
function textHost(): ServableModel {
  const host = new ModelHost<Feeds, Feeds>(
    async (items) =>
      items.map((f) => {
        const texts = f.text!.data as string[];
        return { length: { type: 'int32', data: Int32Array.from(texts, (t) => t.length), dims: f.text!.dims }, upper: { type: 'string', data: texts.map((t) => t.toUpperCase()), dims: f.text!.dims } };
      }),
    { maxBatchSize: 8, name: 'text' },
  );
  Object.defineProperty(host, 'model', {
    value: {
      inputs: [{ name: 'text', dtype: 'string', dims: ['N'], batchAxis: 0 }],
      outputs: [
        { name: 'length', dtype: 'int32', dims: ['N'], batchAxis: 0 },
        { name: 'upper', dtype: 'string', dims: ['N'], batchAxis: 0 },
      ],
    },
  });
  return host as unknown as ServableModel;
}

beforeAll(async () => {
  files = modelFiles();
  const session = { intraOpNumThreads: 1 };
  linear = await createOnnxHost(files.linear, { maxBatchSize: 16, session });
  multi = await createOnnxHost(files.multi, { maxBatchSize: 8, session });
  int64 = await createOnnxHost(files.int64, { maxBatchSize: 8, session });
  core = createServingCore({ models: { linear, multi, int64, text: textHost() } });
  grpcServer = createGrpcServer({ core });
  http = createInferenceServer({ core });
  const { port } = await grpcServer.listen(0);
  ({ port: httpPort } = await http.listen(0));
  client = connect(port);
});
afterAll(async () => {
  client.close();
  await Promise.all([grpcServer.close(), http.close()]);
  await core.close();
  files.cleanup();
});

test('the shipped .proto is the package file proto/inference.proto', () => {
  expect(INFERENCE_PROTO.replace(/\\/g, '/')).toMatch(/\/proto\/inference\.proto$/);
});

test('ServerLive, ServerReady, ServerMetadata answer as the protocol says', async () => {
  expect(await client.unary('ServerLive', {})).toEqual({ live: true });
  expect(await client.unary('ServerReady', {})).toEqual({ ready: true });
  expect(await client.unary('ServerMetadata', {})).toEqual({ name: 'microbatch', version: packageVersion(), extensions: ['binary_tensor_data', 'model_configuration', 'statistics'] });
});

test('ModelReady: true for a served model at its version or none', async () => {
  expect(await client.unary('ModelReady', { name: 'linear' })).toEqual({ ready: true });
  expect(await client.unary('ModelReady', { name: 'linear', version: '1' })).toEqual({ ready: true });
});

test('ModelMetadata: the REST metadata in the protocol message, max_batch_size in properties', async () => {
  const meta = await client.unary('ModelMetadata', { name: 'multi' });
  const rest = (await call(httpPort, 'GET', '/v2/models/multi')).json();
  expect(meta).toEqual({
    name: 'multi',
    versions: ['1'],
    platform: rest.platform,
    inputs: rest.inputs.map((t: { name: string; datatype: string; shape: number[] }) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(String) })),
    outputs: rest.outputs.map((t: { name: string; datatype: string; shape: number[] }) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(String) })),
    properties: { max_batch_size: '8' },
  });
  expect(meta.inputs[0]).toEqual({ name: 'A', datatype: 'FP32', shape: ['-1', '3'] });
});

test("ModelConfig: Triton's configuration message with the REST config's values", async () => {
  const { config } = await client.unary('ModelConfig', { name: 'linear', version: '1' });
  const rest = (await call(httpPort, 'GET', '/v2/models/linear/config')).json();
  expect(config).toMatchObject({
    name: 'linear',
    platform: rest.platform,
    max_batch_size: rest.max_batch_size,
    version_policy: { latest: { num_versions: 1 } },
    input: [{ name: 'X', data_type: 'TYPE_FP32', dims: ['4'] }],
    output: [{ name: 'Y', data_type: 'TYPE_FP32', dims: ['3'] }],
    dynamic_batching: { max_queue_delay_microseconds: String(rest.dynamic_batching.max_queue_delay_microseconds), default_queue_policy: { max_queue_size: rest.dynamic_batching.default_queue_policy.max_queue_size } },
  });
});

test('ModelInfer, typed contents: the id echoed, model_version set, outputs typed, as session.run', async () => {
  const row = [0.5, -1, 2, 3];
  const res = await client.unary('ModelInfer', { model_name: 'linear', id: 'req-7', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: row } }] });
  expect(res).toMatchObject({ model_name: 'linear', model_version: '1', id: 'req-7', raw_output_contents: [] });
  expect(res.outputs).toHaveLength(1);
  expect(res.outputs[0]).toMatchObject({ name: 'Y', datatype: 'FP32', shape: ['1', '3'] });
  const want = linearReference(row);
  res.outputs[0].contents.fp32_contents.forEach((v: number, i: number) => expect(v).toBeCloseTo(want[i] as number, 5));
});

test('ModelInfer, raw contents: answered in raw_output_contents, one entry per output in order', async () => {
  const a = [1, 2, 3];
  const b = [0.5, 0.25, 2];
  const scale = new Float32Array([3]);
  const res = await client.unary('ModelInfer', {
    model_name: 'multi',
    inputs: [
      { name: 'A', datatype: 'FP32', shape: [1, 3] },
      { name: 'B', datatype: 'FP32', shape: [1, 3] },
      { name: 'scale', datatype: 'FP32', shape: [] },
    ],
    raw_input_contents: [f32Bytes(a), f32Bytes(b), Buffer.from(scale.buffer)],
  });
  const want = multiIoReference(a, b, 3);
  expect(res.outputs.map((o: { name: string; contents: unknown }) => [o.name, o.contents])).toEqual([
    ['S', null],
    ['P', null],
  ]);
  expect(res.raw_output_contents).toHaveLength(2);
  f32Values(res.raw_output_contents[0]).forEach((v, i) => expect(v).toBeCloseTo(want.S[i] as number, 5));
  expect(f32Values(res.raw_output_contents[1])[0]).toBeCloseTo(want.P, 5);
});

test('ModelInfer: requested outputs only, in the order asked; INT64 typed and raw are exact', async () => {
  const ids = [1n, 9n, 3n, 2n];
  const typed = await client.unary('ModelInfer', {
    model_name: 'int64',
    inputs: [{ name: 'ids', datatype: 'INT64', shape: [1, 4], contents: { int64_contents: ids.map(String) } }],
    outputs: [{ name: 'doubled' }],
  });
  expect(typed.outputs.map((o: { name: string }) => o.name)).toEqual(['doubled']);
  expect(typed.outputs[0].contents.int64_contents).toEqual(int64Reference(ids).doubled.map(String));
  const raw = await client.unary('ModelInfer', {
    model_name: 'int64',
    inputs: [{ name: 'ids', datatype: 'INT64', shape: [1, 4] }],
    outputs: [{ name: 'doubled' }, { name: 'pooled' }],
    raw_input_contents: [Buffer.from(BigInt64Array.from(ids).buffer)],
  });
  expect(raw.outputs.map((o: { name: string }) => o.name)).toEqual(['doubled', 'pooled']);
  expect([...new BigInt64Array(new Uint8Array(raw.raw_output_contents[0]).buffer)]).toEqual(int64Reference(ids).doubled);
});

test('ModelInfer: BYTES typed (bytes_contents) and raw (4-byte length prefixes) both carry text', async () => {
  const typed = await client.unary('ModelInfer', { model_name: 'text', inputs: [{ name: 'text', datatype: 'BYTES', shape: [2], contents: { bytes_contents: [Buffer.from('ab'), Buffer.from('héllo')] } }] });
  expect(typed.outputs.map((o: { contents: Record<string, unknown[]> }) => [o.contents.int_contents, o.contents.bytes_contents!.map(String)])).toEqual([
    [[2, 5], []],
    [[], ['AB', 'HÉLLO']],
  ]);
  const raw = Buffer.concat([Buffer.from([2, 0, 0, 0]), Buffer.from('ab'), Buffer.from([1, 0, 0, 0]), Buffer.from('z')]);
  const res = await client.unary('ModelInfer', { model_name: 'text', inputs: [{ name: 'text', datatype: 'BYTES', shape: [2] }], raw_input_contents: [raw] });
  expect([...new Int32Array(new Uint8Array(res.raw_output_contents[0]).buffer)]).toEqual([2, 1]);
  expect(Buffer.from(res.raw_output_contents[1])).toEqual(Buffer.concat([Buffer.from([2, 0, 0, 0]), Buffer.from('AB'), Buffer.from([1, 0, 0, 0]), Buffer.from('Z')]));
});

test('ModelInfer: parameters binary_data_output asks for raw outputs from typed inputs', async () => {
  const res = await client.unary('ModelInfer', {
    model_name: 'linear',
    parameters: { binary_data_output: { bool_param: true } },
    inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 1, 1, 1] } }],
  });
  expect(res.raw_output_contents).toHaveLength(1);
  f32Values(res.raw_output_contents[0]).forEach((v, i) => expect(v).toBeCloseTo(linearReference([1, 1, 1, 1])[i] as number, 5));
});

test('gRPC and REST answer the same input equally (JSON vs typed, binary vs raw)', async () => {
  const rows = [
    [0.1, 0.2, 0.3, 0.4],
    [-4, 3, 2, 1],
  ];
  const rest = (await call(httpPort, 'POST', '/v2/models/linear/infer', { body: { id: 'same', inputs: [{ name: 'X', datatype: 'FP32', shape: [2, 4], data: rows.flat() }] } })).json();
  const typed = await client.unary('ModelInfer', { model_name: 'linear', id: 'same', inputs: [{ name: 'X', datatype: 'FP32', shape: [2, 4], contents: { fp32_contents: rows.flat() } }] });
  expect({ model_name: typed.model_name, model_version: typed.model_version, id: typed.id, outputs: typed.outputs.map((o: { name: string; datatype: string; shape: string[]; contents: { fp32_contents: number[] } }) => ({ name: o.name, datatype: o.datatype, shape: o.shape.map(Number), data: o.contents.fp32_contents })) }).toEqual(rest);

  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [2, 4], parameters: { binary_data_size: 32 } }], parameters: { binary_data_output: true } }));
  const restBinary = await call(httpPort, 'POST', '/v2/models/linear/infer', { body: Buffer.concat([header, f32Bytes(rows.flat())]), headers: { 'Inference-Header-Content-Length': header.length, 'Content-Type': 'application/octet-stream' } });
  const headerLength = Number(restBinary.headers['inference-header-content-length']);
  const raw = await client.unary('ModelInfer', { model_name: 'linear', inputs: [{ name: 'X', datatype: 'FP32', shape: [2, 4] }], raw_input_contents: [f32Bytes(rows.flat())] });
  expect(Buffer.from(raw.raw_output_contents[0])).toEqual(restBinary.body.subarray(headerLength));
});

test('ModelStatistics: the REST statistics, for one model or (no name) every batching model', async () => {
  await client.unary('ModelInfer', { model_name: 'linear', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }] });
  const one = await client.unary('ModelStatistics', { name: 'linear' });
  const rest = (await call(httpPort, 'GET', '/v2/models/linear/stats')).json();
  expect(one.model_stats).toHaveLength(1);
  expect(one.model_stats[0]).toMatchObject({ name: 'linear', version: '1', inference_count: String(rest.model_stats[0].inference_count), execution_count: String(rest.model_stats[0].execution_count) });
  expect(Number(one.model_stats[0].inference_stats.success.count)).toBeGreaterThan(0);
  expect(one.model_stats[0].batch_stats.length).toBeGreaterThan(0);
  const all = await client.unary('ModelStatistics', {});
  expect(all.model_stats.map((s: { name: string }) => s.name)).toEqual(['linear', 'multi', 'int64', 'text']);
});
