import { createGrpcServer, createServingCore, type GrpcServer, type ServingCore } from '../../src/grpc';
import { PooledStreamDecoder, releaseMessageBuffer } from '../../src/grpc/message-decoder';
import { ModelHost } from '../../src/engine/model-host';
import type { ServableModel } from '../../src/http';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { bufferPoolStats } from '../../src/tensor/buffer-pool';
import { connect, f32Values, type Client } from './client';

// gRPC messages read into reused buffers (src/grpc/message-decoder.ts): the decoder frames exactly
// as grpc-js's does, a ModelInfer request's buffer is reused only after its answer is written, and
// answers stay right when every call's bytes land in a buffer an earlier call used.

// grpc-js's own decoder, taken before any server of this file replaces the module's export.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { StreamDecoder: GrpcDecoder } = require('@grpc/grpc-js/build/src/stream-decoder') as { StreamDecoder: new (max: number) => { write(data: Buffer): Buffer[] } };

/** gRPC framing: a compressed-flag byte, a big-endian length, the message. */
function framed(body: Buffer, flag = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flag;
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** Seeded bytes, so that a failure repeats. */
function bytes(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

describe('PooledStreamDecoder frames as grpc-js does', () => {
  const messages = [bytes(0, 1), bytes(3, 2), framed(bytes(70_000, 3)).subarray(5), bytes(200_000, 4), bytes(1, 5)];
  const stream = Buffer.concat(messages.map((m, i) => framed(m, i % 2)));

  test.each([1, 2, 5, 7, 4096, 16_384, 65_536, stream.length])('chunks of %d bytes: the same messages, prefix included, byte for byte', (size) => {
    const ours = new PooledStreamDecoder(-1);
    const theirs = new GrpcDecoder(-1);
    const a: Buffer[] = [];
    const b: Buffer[] = [];
    for (let at = 0; at < stream.length; at += size) {
      const chunk = stream.subarray(at, at + size);
      a.push(...ours.write(chunk));
      b.push(...theirs.write(chunk));
    }
    expect(a.map((m) => m.toString('hex'))).toEqual(b.map((m) => m.toString('hex')));
    expect(a).toHaveLength(messages.length);
    // Between messages, as release-reads.ts expects of a decoder.
    expect([ours.readState, ours.readPartialMessage]).toEqual([0, []]);
  });

  test('a message over the limit throws what grpc-js throws, before anything is allocated for it', () => {
    const big = framed(bytes(10, 6));
    const theirs = (() => {
      try {
        new GrpcDecoder(9).write(big);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    })();
    expect(() => new PooledStreamDecoder(9).write(big)).toThrow(new Error(theirs));
    expect(theirs).toBe('Received message larger than max (10 vs 9)');
  });

  test('a released buffer is the next message of its size; it goes back once; a buffer the decoder did not make never does', () => {
    const decoder = new PooledStreamDecoder(-1);
    const [first] = decoder.write(framed(bytes(100_000, 7))) as [Buffer];
    expect(releaseMessageBuffer(first.subarray(5))).toBe(true);
    expect(releaseMessageBuffer(first.subarray(5))).toBe(false);
    const [second] = decoder.write(framed(bytes(100_000, 8))) as [Buffer];
    expect(second.buffer).toBe(first.buffer);
    expect(second.subarray(5).equals(bytes(100_000, 8))).toBe(true);
    expect(releaseMessageBuffer(Buffer.alloc(100_005))).toBe(false);
  });
});

describe('ModelInfer over reused message buffers', () => {
  const WIDTH = 20_000; // 80 KB of float32 a request: past the pool's 64 KiB floor
  let core: ServingCore;
  let server: GrpcServer;
  let client: Client;

  /** Holds the model before it reads its batch, while set (the test that a running call's buffer is not reused). */
  let gate: { started: () => void; open: Promise<void> } | undefined;

  /** A model that sums each request's row, reading the request's own tensor while it runs. */
  function sumHost(): ServableModel {
    const host = new ModelHost<Record<string, TensorLike>, Record<string, TensorLike>>(
      async (items) => {
        const g = gate;
        if (g !== undefined) {
          g.started();
          await g.open;
        }
        await new Promise((r) => setTimeout(r, 2)); // the requests' bytes are read after a wait, as a model in flight would
        return items.map((f) => {
          const x = f.x!.data as Float32Array;
          let s = 0;
          for (let i = 0; i < x.length; i++) s += x[i] as number;
          return { sum: { type: 'float32', data: Float32Array.of(s), dims: [1] } };
        });
      },
      { maxBatchSize: 16, name: 'sum' },
    );
    Object.defineProperty(host, 'model', {
      value: { inputs: [{ name: 'x', dtype: 'float32', dims: ['N', WIDTH], batchAxis: 0 }], outputs: [{ name: 'sum', dtype: 'float32', dims: ['N'], batchAxis: 0 }] },
    });
    return host as unknown as ServableModel;
  }

  beforeAll(async () => {
    core = createServingCore({ models: { sum: sumHost() } });
    server = createGrpcServer({ core });
    client = connect((await server.listen(0)).port);
  });
  afterAll(async () => {
    client.close();
    await server.close();
    await core.close();
  });

  test('a call that fails keeps its buffer out of the pool (its bytes may still be read by whoever holds them)', async () => {
    const before = bufferPoolStats().buffers;
    const raw = Buffer.from(new Float32Array(WIDTH).fill(1).buffer);
    await expect(client.unary('ModelInfer', { model_name: 'nope', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, WIDTH] }], raw_input_contents: [raw] })).rejects.toMatchObject({ details: expect.stringContaining('nope') });
    expect(bufferPoolStats().buffers).toBe(before); // first in this block: the pool has room for one more of this size
  });

  test('96 concurrent calls a round, three rounds: every answer is its own request sum, and later rounds reuse the first round\'s buffers', async () => {
    const hitsBefore = bufferPoolStats().hits;
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(
        Array.from({ length: 96 }, (_, i) => {
          const value = round * 100 + i + 1;
          const raw = Buffer.from(new Float32Array(WIDTH).fill(value).buffer);
          return client.unary('ModelInfer', { model_name: 'sum', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, WIDTH] }], raw_input_contents: [raw] }).then((res) => ({ value, res }));
        }),
      );
      for (const { value, res } of answers) {
        const [sum] = res.raw_output_contents.length > 0 ? f32Values(res.raw_output_contents[0]) : (res.outputs[0].contents.fp32_contents as number[]);
        expect(sum).toBe(value * WIDTH);
      }
    }
    expect(bufferPoolStats().hits - hitsBefore).toBeGreaterThanOrEqual(96);
  });

  test("a call still running keeps its buffer: a call that arrives meanwhile is read into another, and each answer is its own", async () => {
    const send = (value: number) =>
      client.unary('ModelInfer', { model_name: 'sum', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, WIDTH] }], raw_input_contents: [Buffer.from(new Float32Array(WIDTH).fill(value).buffer)] });
    const sumOf = (res: Record<string, any>) => f32Values(res.raw_output_contents[0])[0]; // eslint-disable-line @typescript-eslint/no-explicit-any
    let open!: () => void;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    gate = { started: () => started(), open: new Promise<void>((r) => (open = r)) };
    try {
      const first = send(7);
      await running; // the first call's batch holds its tensor, unread yet
      gate = undefined;
      const second = send(9); // read while the first is held: it must not land in the first's buffer
      await new Promise((r) => setTimeout(r, 50));
      open();
      expect(sumOf(await first)).toBe(7 * WIDTH);
      expect(sumOf(await second)).toBe(9 * WIDTH);
    } finally {
      gate = undefined;
      open();
    }
  });

});
