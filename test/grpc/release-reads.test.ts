import * as grpc from '@grpc/grpc-js';
import { createGrpcServer, type GrpcServer } from '../../src/grpc';
import { releaseReadBuffers } from '../../src/grpc/release-reads';
import { ModelHost } from '../../src/engine/model-host';
import type { ServableModel } from '../../src/http';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { connect, f32Bytes, type Client } from './client';

// grpc-js's per-call decoder keeps the chunks a message arrived in (views into 64 KiB socket read
// buffers) until the next message starts: for a unary call, for as long as it waits in the queue.
// releaseReadBuffers drops them. It reaches into grpc-js's private fields, so these tests also
// guard the installed grpc-js: if it keeps them elsewhere, they fail.

type Feeds = Record<string, TensorLike>;

/** A model that records what the decoder of each call held when its handler ran. */
function echo(): ServableModel {
  const host = new ModelHost<Feeds, Feeds>(async (items) => items.map((f) => ({ Y: f.X! })), { maxBatchSize: 8, name: 'echo' });
  Object.defineProperty(host, 'model', {
    value: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 'D'], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 'D'], batchAxis: 0 }] },
  });
  return host as unknown as ServableModel;
}

interface Decoder {
  readState: number;
  readPartialMessage: Buffer[];
}

test('the decoder of a unary call held the message chunks, and holds nothing after releaseReadBuffers', async () => {
  const server = new grpc.Server();
  const seen: Array<{ before: number; released: boolean; after: number }> = [];
  server.register(
    '/t/Unary',
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const decoder = (call as unknown as { call: { decoder: Decoder } }).call.decoder;
      const before = decoder.readPartialMessage.length;
      const released = releaseReadBuffers(call);
      seen.push({ before, released, after: decoder.readPartialMessage.length });
      callback(null, Buffer.from('ok'));
    },
    (b: Buffer) => b,
    (b: Buffer) => b,
    'unary',
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    const answer = await new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest('/t/Unary', (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(200_000, 7), (e, r) => (e ? reject(e) : resolve(r!))),
    );
    expect(answer.toString()).toBe('ok');
    expect(seen).toEqual([{ before: expect.any(Number), released: true, after: 0 }]);
    expect(seen[0]!.before).toBeGreaterThan(0); // 200 kB arrive in several chunks, all held
  } finally {
    client.close();
    server.forceShutdown();
  }
});

test('an object that is not a grpc-js call is left alone', () => {
  expect(releaseReadBuffers({})).toBe(false);
  expect(releaseReadBuffers({ call: { decoder: { readState: 2, readPartialMessage: [Buffer.alloc(1)] } } })).toBe(false); // mid-message: a stream's next one
});

describe('served calls answer the same with the buffers released', () => {
  let server: GrpcServer;
  let client: Client;
  beforeAll(async () => {
    server = createGrpcServer({ models: { echo: echo() } });
    client = connect((await server.listen(0)).port);
  });
  afterAll(async () => {
    client.close();
    await server.close();
  });

  test('ModelInfer with raw contents, 32 at once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, i) => {
        const values = Array.from({ length: 20_000 }, (_, k) => i + k / 8);
        return client.unary('ModelInfer', { model_name: 'echo', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, values.length] }], raw_input_contents: [f32Bytes(values)] }).then((r) => ({ r, values }));
      }),
    );
    for (const { r, values } of answers) expect(Array.from(new Float32Array(Uint8Array.from(r.raw_output_contents[0]).buffer))).toEqual(values);
  });

  test('ModelStreamInfer: messages sent back to back, each answered with its own values', async () => {
    const stream = client.stream();
    const got: number[][] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (m: { infer_response: { raw_output_contents: Buffer[] } }) => {
        got.push(Array.from(new Float32Array(Uint8Array.from(m.infer_response.raw_output_contents[0]!).buffer)));
        if (got.length === 6) resolve();
      });
      stream.on('error', reject);
    });
    const sent = Array.from({ length: 6 }, (_, i) => Array.from({ length: 30_000 }, (_, k) => i * 1000 + k));
    for (const values of sent) stream.write({ model_name: 'echo', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, values.length] }], raw_input_contents: [f32Bytes(values)] });
    await done;
    stream.end();
    expect(got).toEqual(sent);
  });
});
