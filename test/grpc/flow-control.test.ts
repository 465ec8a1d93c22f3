import { connect as http2Connect, type ClientHttp2Session } from 'node:http2';
import { createGrpcServer, type GrpcServer } from '../../src/grpc';
import { HTTP2_TUNING } from '../../src/grpc/flow-control';
import { ModelHost } from '../../src/engine/model-host';
import type { ServableModel } from '../../src/http';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { waitFor } from '../support/wait-for';
import { connect, f32Values } from './client';

// The gRPC server advertises HTTP/2 windows and a frame size large enough for a raw tensor
// message to arrive without stopping for WINDOW_UPDATEs. grpc-js has no option for them, so this
// also guards the installed grpc-js version: if it stops taking them, this fails.

type Feeds = Record<string, TensorLike>;

function doubling(): ServableModel {
  const host = new ModelHost<Feeds, Feeds>(
    async (items) => items.map((f) => ({ Y: { type: 'float32', data: Float32Array.from(f.X!.data as Float32Array, (v) => v * 2), dims: f.X!.dims } })),
    { maxBatchSize: 8, name: 'double' },
  );
  Object.defineProperty(host, 'model', {
    value: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 'D'], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 'D'], batchAxis: 0 }] },
  });
  return host as unknown as ServableModel;
}

let server: GrpcServer;
let port: number;

beforeAll(async () => {
  server = createGrpcServer({ models: { double: doubling() } });
  ({ port } = await server.listen(0));
});
afterAll(() => server.close());

test('the server advertises a 1 MiB stream window and frame size, and raises the connection window to 16 MiB', async () => {
  const session: ClientHttp2Session = http2Connect(`http://127.0.0.1:${port}`);
  try {
    await new Promise<void>((resolve, reject) => {
      session.once('remoteSettings', () => resolve());
      session.once('error', reject);
    });
    expect(session.remoteSettings).toMatchObject({ initialWindowSize: HTTP2_TUNING.streamWindow, maxFrameSize: HTTP2_TUNING.maxFrameSize });
    // The connection window arrives as a WINDOW_UPDATE after the settings.
    await waitFor(() => session.state.remoteWindowSize === HTTP2_TUNING.connectionWindow, 5_000);
  } finally {
    session.destroy();
  }
});

test('messages of several frames and windows still arrive whole: 8 concurrent 2 MiB raw tensors, each answered with its own rows', async () => {
  const client = connect(port, { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 });
  try {
    const d = 512 * 1024; // 2 MiB of FP32 per request: two stream windows, more than one frame
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, k) => {
        const row = Float32Array.from({ length: d }, (_, i) => (i % 1000) + k);
        return client
          .unary('ModelInfer', { model_name: 'double', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, d] }], raw_input_contents: [Buffer.from(row.buffer)] })
          .then((r) => f32Values(r.raw_output_contents[0]));
      }),
    );
    answers.forEach((values, k) => {
      expect(values).toHaveLength(d);
      expect([values[0], values[999], values[d - 1]]).toEqual([2 * k, 2 * (999 + k), 2 * (((d - 1) % 1000) + k)]);
    });
  } finally {
    client.close();
  }
});
