import type * as Grpc from '@grpc/grpc-js';
import { describe } from '../core/describe';
import { ServingCore, type CoreCloseOptions, type ServingCoreOptions } from '../serving';
import { GrpcCalls, msLeft } from './calls';
import type { ModelInferRequest, ModelRequest } from './messages';
import { loadGrpcRuntime } from './proto';
import { REASON_KEY } from './status';
import { raiseFlowControl } from './flow-control';
import { releaseReadBuffers } from './release-reads';
import { answered } from './message-decoder';
import { handleStream, type OpenStream } from './stream';

/**
 * Options of {@link createGrpcServer}: a serving core to share with other transports (`core`), or
 * what to make one of (the options of `createServingCore`: `models`, `generators`, `limits`,
 * `log`, `stopModelsOnClose`), not both.
 *
 * @example
 * ```ts
 * import type { GrpcServerOptions } from 'microbatch/grpc';
 * const options: GrpcServerOptions = { models: { classifier: host }, limits: { maxBodyBytes: 8 * 1024 * 1024 } };
 * ```
 */
export interface GrpcServerOptions extends ServingCoreOptions {
  /**
   * A core to serve, shared with the HTTP server (`createInferenceServer({ core })`): one registry,
   * one set of limits and one admission bound for both, and their concurrent calls land in the same
   * batches. The gRPC server never closes a core it was given; close it yourself (or hand it to
   * `handleShutdownSignals` with the servers).
   * @default a core of its own, made from the other options, closed with the server
   */
  core?: ServingCore;
}

/**
 * Where a gRPC server listens.
 *
 * @example
 * ```ts
 * const { port } = await grpcServer.listen(0); // a free port
 * ```
 */
export interface GrpcAddress {
  /** The interface it is bound to, as given to `listen`. */
  readonly address: string;
  /** The port, the one picked when `listen` was given 0. */
  readonly port: number;
}

/**
 * What {@link createGrpcServer} returns.
 *
 * @example
 * ```ts
 * const server: GrpcServer = createGrpcServer({ models: { classifier: host } });
 * await server.listen(8001);
 * await server.close({ drain: true, timeoutMs: 10_000 });
 * ```
 */
export interface GrpcServer {
  /** The core it serves (its own, or the one it was given). */
  readonly core: ServingCore;
  /** True while the core is ready and this server is not closing (what `ServerReady` answers). */
  readonly ready: boolean;
  /**
   * Starts listening, plaintext (put TLS in front, as for HTTP), and resolves with the bound address.
   * @param port - 0 picks a free port. @default 8001 (Triton's gRPC port)
   * @param host - the interface to bind; `'0.0.0.0'` exposes the server beyond this machine. @default '127.0.0.1'
   */
  listen(port?: number, host?: string): Promise<GrpcAddress>;
  /**
   * Stops taking calls (new ones get `UNAVAILABLE`), answers the calls in flight (`drain`, up to
   * `timeoutMs`; then they are cancelled), ends idle streams, and closes the core when the server
   * made it. Idempotent: a second call returns the first call's promise.
   */
  close(options?: CoreCloseOptions): Promise<void>;
}

const CORE_OPTIONS: ReadonlyArray<keyof ServingCoreOptions> = ['models', 'generators', 'limits', 'log', 'stopModelsOnClose'];

function coreOf(options: GrpcServerOptions): { core: ServingCore; owned: boolean } {
  if (typeof options !== 'object' || options === null) throw new TypeError(`createGrpcServer: expected options { models, ... } or { core }, got ${describe(options)}`);
  if (options.core === undefined) return { core: new ServingCore(options, 'createGrpcServer'), owned: true };
  if (!(options.core instanceof ServingCore)) throw new TypeError(`createGrpcServer: \`core\` must be a ServingCore (from createServingCore), got ${describe(options.core)}`);
  const beside = CORE_OPTIONS.filter((k) => options[k] !== undefined);
  if (beside.length > 0) throw new TypeError(`createGrpcServer: \`${beside.join('`, `')}\` cannot be given with \`core\`; they are the core's own options (give them to createServingCore)`);
  return { core: options.core, owned: false };
}

/**
 * A gRPC server for the Open Inference Protocol (`inference.GRPCInferenceService`, the service in
 * {@link INFERENCE_PROTO}) on `@grpc/grpc-js`: `ServerLive`, `ServerReady`, `ModelReady`,
 * `ServerMetadata`, `ModelMetadata`, `ModelInfer` (typed `contents` or little-endian
 * `raw_input_contents`; raw in is answered raw, one `raw_output_contents` entry per output), and
 * Triton's `ModelConfig`, `ModelStatistics` and `ModelStreamInfer` (one response per token for a
 * generator). Every `ModelInfer` is one `host.inference()` call, batched with the other calls of
 * every transport serving the same core.
 *
 * Failures answer the gRPC status of the serving core's code, with REST's message as the details
 * and REST's `code` in the trailing metadata `microbatch-error-code`: NOT_FOUND (model, version),
 * INVALID_ARGUMENT (input), UNAVAILABLE (full, stopping, loading), DEADLINE_EXCEEDED,
 * CANCELLED, INTERNAL (the model threw); a message over `limits.maxBodyBytes` is refused
 * RESOURCE_EXHAUSTED by grpc-js. A call's gRPC deadline is its request's time limit (within
 * `limits.maxTimeoutMs`); a cancelled call leaves the host's queue.
 *
 * Needs the optional peers `@grpc/grpc-js` and `@grpc/proto-loader`.
 *
 * @example
 * ```ts
 * import { createOnnxHost } from 'microbatch/onnx';
 * import { createInferenceServer, createServingCore, handleShutdownSignals } from 'microbatch/http';
 * import { createGrpcServer } from 'microbatch/grpc';
 *
 * const core = createServingCore({ models: { classifier: await createOnnxHost('cls.onnx', { maxBatchSize: 32 }) } });
 * const http = createInferenceServer({ core });
 * const grpc = createGrpcServer({ core });
 * await http.listen(8000);
 * await grpc.listen(8001);
 * handleShutdownSignals([http, grpc, core]);
 * ```
 */
export function createGrpcServer(options: GrpcServerOptions): GrpcServer {
  const { grpc, service } = loadGrpcRuntime(); // first: a missing peer leaves no core behind
  const { core, owned } = coreOf(options);
  const calls = new GrpcCalls(core);
  const streams = new Set<OpenStream>();
  // grpc-js refuses a larger message itself (RESOURCE_EXHAUSTED) before it is decoded.
  const server = new grpc.Server({ 'grpc.max_receive_message_length': core.limits.maxBodyBytes, 'grpc.max_send_message_length': -1 });
  const flow = raiseFlowControl(server);

  function reply<Req, Res>(rpc: string, answer: (req: Req, call: Grpc.ServerUnaryCall<Req, Res>) => Res | Promise<Res>): Grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      Promise.resolve()
        .then(() => answer(call.request, call))
        .then(
          (res) => callback(null, res),
          (e: unknown) => {
            const request = call.request as ModelRequest & ModelInferRequest;
            const f = calls.fail(rpc, request.model_name ?? request.name ?? '', e);
            const metadata = new grpc.Metadata();
            metadata.set(REASON_KEY, f.reason);
            callback({ code: f.code, details: f.details, metadata });
          },
        );
    };
  }

  server.addService(service, {
    ServerLive: reply('ServerLive', () => ({ live: true })),
    ServerReady: reply('ServerReady', () => calls.serverReady()),
    ModelReady: reply('ModelReady', (req: ModelRequest) => calls.modelReady(req)),
    ServerMetadata: reply('ServerMetadata', () => calls.serverMetadata()),
    ModelMetadata: reply('ModelMetadata', (req: ModelRequest) => calls.modelMetadata(req)),
    ModelConfig: reply('ModelConfig', (req: ModelRequest) => calls.modelConfig(req)),
    ModelStatistics: reply('ModelStatistics', (req: ModelRequest) => calls.modelStatistics(req)),
    ModelInfer: reply('ModelInfer', async (req: ModelInferRequest, call) => {
      releaseReadBuffers(call); // the call may wait in the queue: keep only its tensor
      const abort = new AbortController();
      const onCancel = (): void => abort.abort(new Error('the client cancelled the call'));
      call.once('cancelled', onCancel);
      try {
        const res = await calls.infer(req, msLeft(call.getDeadline()), abort.signal);
        answered(req, res); // its message buffer is reused once the answer is serialized
        return res;
      } finally {
        call.off('cancelled', onCancel);
      }
    }),
    ModelStreamInfer: (call: Grpc.ServerDuplexStream<ModelInferRequest, never>) => handleStream(calls, call, streams),
  });

  let closed: Promise<void> | undefined;
  async function doClose(drain: boolean, timeoutMs: number): Promise<void> {
    calls.closing = true;
    for (const s of [...streams]) s.endIfIdle();
    const coreClosed = owned ? core.close({ drain, timeoutMs }) : Promise.resolve();
    if (!drain) server.forceShutdown();
    else {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown(); // calls still running past the drain are cancelled
          resolve();
        }, timeoutMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await coreClosed;
  }

  return {
    core,
    get ready() {
      return core.ready && !calls.closing;
    },
    listen(port = 8001, host = '127.0.0.1') {
      const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      return new Promise<GrpcAddress>((resolve, reject) => {
        server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (error, bound) => {
          if (error) return reject(error);
          flow.onBound();
          resolve({ address: host, port: bound });
        });
      });
    },
    close(closeOptions = {}) {
      closed ??= doClose(closeOptions.drain ?? true, closeOptions.timeoutMs ?? 30_000);
      return closed;
    },
  };
}
