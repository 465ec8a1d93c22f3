/**
 * The messages of `proto/inference.proto` as `@grpc/proto-loader` hands them over with
 * {@link LOADER_OPTIONS}: field names as in the .proto (`model_name`), 64-bit integers as decimal
 * strings, enums as their names, `oneof` members with the member's name beside them, absent fields
 * `undefined`. Messages the server sends may carry numbers where a string is typed (both encode).
 */

/** How the server (and the tests' clients) load the .proto: exact field names, int64 as exact decimal strings. @internal */
export const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, oneofs: true, defaults: false } as const;

/** An int64/uint64 on the wire: a decimal string when read, a string or a number when written. */
export type Int64 = string | number;

/** `InferParameter`: one of five kinds of value, named by `parameter_choice`. */
export interface InferParameter {
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  bool_param?: boolean;
  int64_param?: Int64;
  string_param?: string;
  double_param?: number;
  uint64_param?: Int64;
}

/** `InferTensorContents`: the elements in the field of their datatype. */
export interface InferTensorContents {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: Int64[];
  uint_contents?: number[];
  uint64_contents?: Int64[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

/** `ModelInferRequest.InferInputTensor`. */
export interface InferInputTensor {
  name?: string;
  datatype?: string;
  shape?: Int64[];
  parameters?: Record<string, InferParameter>;
  contents?: InferTensorContents;
}

/** `ModelInferRequest`. */
export interface ModelInferRequest {
  model_name?: string;
  model_version?: string;
  id?: string;
  parameters?: Record<string, InferParameter>;
  inputs?: InferInputTensor[];
  outputs?: Array<{ name?: string; parameters?: Record<string, InferParameter> }>;
  raw_input_contents?: Uint8Array[];
}

/** `ModelInferResponse.InferOutputTensor`. */
export interface InferOutputTensor {
  name: string;
  datatype: string;
  shape: Int64[];
  parameters?: Record<string, InferParameter>;
  contents?: InferTensorContents;
}

/** `ModelInferResponse`. */
export interface ModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameter>;
  outputs: InferOutputTensor[];
  raw_output_contents: Uint8Array[];
}

/** `ModelStreamInferResponse` (Triton): a response, or why one request of the stream failed. */
export interface ModelStreamInferResponse {
  error_message: string;
  infer_response?: ModelInferResponse;
}

/** The requests that name a model: `ModelReadyRequest`, `ModelMetadataRequest`, `ModelConfigRequest`, `ModelStatisticsRequest`. */
export interface ModelRequest {
  name?: string;
  version?: string;
}
