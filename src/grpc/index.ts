/**
 * The gRPC server (`microbatch/grpc`): the Open Inference Protocol's `inference.GRPCInferenceService`
 * (health, metadata, `ModelInfer` with typed or raw tensors) and Triton's `ModelConfig`,
 * `ModelStatistics` and `ModelStreamInfer`, on `@grpc/grpc-js`: one transport over the
 * protocol-neutral serving core (src/serving), beside the HTTP server and sharing its core when
 * given one. Needs the optional peers `@grpc/grpc-js` and `@grpc/proto-loader`.
 * @packageDocumentation
 * @module microbatch/grpc
 */
export { createGrpcServer } from './server';
export type { GrpcAddress, GrpcServer, GrpcServerOptions } from './server';
export { INFERENCE_PROTO, SERVICE_NAME } from './proto';
export { GRPC_STATUS, REASON_KEY } from './status';
export { createServingCore, ServingCore } from '../serving';
export type { CoreCloseOptions, ServingCoreOptions } from '../serving';
