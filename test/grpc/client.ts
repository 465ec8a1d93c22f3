/**
 * A real gRPC client for the tests: @grpc/grpc-js with @grpc/proto-loader over the .proto the
 * package ships (proto/inference.proto), with promise wrappers that resolve to the answer or to
 * the gRPC error (code, details, trailing metadata).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INFERENCE_PROTO } from '../../src/grpc';

// What a client would choose: defaults filled in, so that an empty field reads as the protocol's zero value.
const definition = protoLoader.loadSync(INFERENCE_PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const pkg = grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } };

export type Message = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- test convenience

/** A failed call: the status, its message, and the trailing metadata. */
export interface CallError extends Error {
  readonly code: grpc.status;
  readonly details: string;
  readonly metadata: grpc.Metadata;
}

export interface Client {
  readonly raw: grpc.Client;
  /** Calls a unary RPC; rejects with a {@link CallError}. */
  unary(rpc: string, request: Message, options?: grpc.CallOptions): Promise<Message>;
  /** Starts a unary call, returning it (to cancel) and its answer. */
  start(rpc: string, request: Message, options?: grpc.CallOptions): { call: grpc.ClientUnaryCall; answer: Promise<Message> };
  /** Opens a ModelStreamInfer stream. */
  stream(options?: grpc.CallOptions): grpc.ClientDuplexStream<Message, Message>;
  close(): void;
}

export function connect(port: number, options: grpc.ClientOptions = {}): Client {
  const raw = new pkg.inference.GRPCInferenceService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options) as grpc.Client & Record<string, Function>; // eslint-disable-line @typescript-eslint/no-unsafe-function-type
  const start = (rpc: string, request: Message, options: grpc.CallOptions = {}) => {
    let call!: grpc.ClientUnaryCall;
    const answer = new Promise<Message>((resolve, reject) => {
      call = raw[rpc]!.call(raw, request, new grpc.Metadata(), options, (e: grpc.ServiceError | null, res: Message) => (e ? reject(e) : resolve(res)));
    });
    return { call, answer };
  };
  return {
    raw,
    start,
    unary: (rpc, request, options) => start(rpc, request, options).answer,
    stream: (options = {}) => (raw.ModelStreamInfer as Function).call(raw, new grpc.Metadata(), options), // eslint-disable-line @typescript-eslint/no-unsafe-function-type
    close: () => raw.close(),
  };
}

/** The error a call rejected with (fails the test if it succeeded). */
export async function failure(p: Promise<unknown>): Promise<CallError> {
  try {
    await p;
  } catch (e) {
    return e as CallError;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Reads a stream's messages until the server ends it. */
export function collect(stream: grpc.ClientDuplexStream<Message, Message>): Promise<Message[]> {
  return new Promise((resolve, reject) => {
    const out: Message[] = [];
    stream.on('data', (m: Message) => out.push(m));
    stream.on('end', () => resolve(out));
    stream.on('error', reject);
  });
}

/** Float32 values as little-endian raw contents. */
export function f32Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
}

/** Little-endian raw contents as float32 values. */
export function f32Values(bytes: Uint8Array): number[] {
  const b = Buffer.from(bytes);
  return Array.from({ length: b.length / 4 }, (_, i) => b.readFloatLE(i * 4));
}

export { grpc };
