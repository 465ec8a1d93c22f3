import { dirname, join } from 'node:path';
import type * as Grpc from '@grpc/grpc-js';
import type * as ProtoLoader from '@grpc/proto-loader';
import { requireOptionalPeer } from '../core/optional-peer';
import { LOADER_OPTIONS } from './messages';
import { decodeRemembering, encodeReleasing, usePooledDecoder } from './message-decoder';
import { decodeModelInferRequest } from './wire/infer-request';
import { encodeModelInferResponse, encodeModelStreamInferResponse } from './wire/infer-response';

/**
 * The path of the service definition microbatch serves, `proto/inference.proto` in the package:
 * the Open Inference Protocol's `inference.GRPCInferenceService`, plus Triton's `ModelStreamInfer`,
 * `ModelConfig` and `ModelStatistics`. Generate client stubs from it, or load it at run time.
 *
 * @example
 * ```ts
 * import * as protoLoader from '@grpc/proto-loader';
 * import { INFERENCE_PROTO } from 'microbatch/grpc';
 * const definition = protoLoader.loadSync(INFERENCE_PROTO, { keepCase: true, longs: String });
 * ```
 */
// From dist/grpc/ and from src/grpc/ alike, the package root is two folders up.
export const INFERENCE_PROTO: string = join(__dirname, '..', '..', 'proto', 'inference.proto');

/**
 * The full name of the service in the .proto: `'inference.GRPCInferenceService'` (the protocol's
 * package and service), the key of its definition in what `@grpc/proto-loader` loads.
 *
 * @example
 * ```ts
 * import * as protoLoader from '@grpc/proto-loader';
 * import { INFERENCE_PROTO, SERVICE_NAME } from 'microbatch/grpc';
 * const service = protoLoader.loadSync(INFERENCE_PROTO)[SERVICE_NAME];
 * ```
 */
export const SERVICE_NAME = 'inference.GRPCInferenceService';

/** What the server needs from the two optional peers, loaded once. @internal */
export interface GrpcRuntime {
  readonly grpc: typeof Grpc;
  readonly service: Grpc.ServiceDefinition;
}

let cached: GrpcRuntime | undefined;

/**
 * The service with `ModelInfer` and `ModelStreamInfer` decoded and encoded by the hand-written
 * codec of `wire/` instead of protobufjs: the per-call path (see docs/serving.md, "Throughput").
 * The other RPCs keep proto-loader's, from the same .proto.
 */
function withInferCodec(service: Grpc.ServiceDefinition): Grpc.ServiceDefinition {
  const { ModelInfer, ModelStreamInfer } = service as Record<string, Grpc.MethodDefinition<unknown, unknown>>;
  if (ModelInfer === undefined || ModelStreamInfer === undefined) throw new Error(`microbatch/grpc: ${INFERENCE_PROTO} lacks ModelInfer or ModelStreamInfer`);
  return {
    ...service,
    ModelInfer: { ...ModelInfer, requestDeserialize: decodeRemembering(decodeModelInferRequest), responseSerialize: encodeReleasing(encodeModelInferResponse) },
    ModelStreamInfer: { ...ModelStreamInfer, requestDeserialize: decodeModelInferRequest, responseSerialize: encodeModelStreamInferResponse },
  } as Grpc.ServiceDefinition;
}

/**
 * Loads @grpc/grpc-js and @grpc/proto-loader on first use (optional peers: `microbatch serve`
 * without `--grpc-port` must work without them) and the service definition from the shipped .proto.
 * @internal
 */
export function loadGrpcRuntime(load?: (id: string) => unknown): GrpcRuntime {
  if (cached !== undefined && load === undefined) return cached;
  const grpc = requireOptionalPeer<typeof Grpc>('@grpc/grpc-js', 'microbatch/grpc', load);
  const loader = requireOptionalPeer<typeof ProtoLoader>('@grpc/proto-loader', 'microbatch/grpc', load);
  const definition = loader.loadSync(INFERENCE_PROTO, LOADER_OPTIONS);
  const runtime = { grpc, service: withInferCodec(definition[SERVICE_NAME] as Grpc.ServiceDefinition) };
  if (load === undefined) {
    // Messages read into reused buffers (message-decoder.ts), from the grpc-js this loaded.
    usePooledDecoder(() => join(dirname(require.resolve('@grpc/grpc-js')), 'stream-decoder.js'));
    cached = runtime;
  }
  return runtime;
}
