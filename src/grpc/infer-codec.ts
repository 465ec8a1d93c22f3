import {
  answerOutputs,
  decodeBinary,
  decodeRequest,
  encodeBinary,
  invalidArgument,
  isKServeDatatype,
  type DecodedRequest,
  type InferenceServable,
} from '../serving';
import type { TensorData } from '../tensor/dtypes';
import type { TensorLike } from '../tensor/tensor-like';
import { contentsData, tensorContents } from './contents';
import type { InferInputTensor, InferParameter, ModelInferRequest, ModelInferResponse } from './messages';

/** A `ModelInferRequest` checked against its model: the decoded request, and whether it is answered raw. @internal */
export interface GrpcInferRequest {
  readonly request: DecodedRequest;
  /** Answer in `raw_output_contents` (the request sent raw inputs, or asked with `binary_data_output`). */
  readonly raw: boolean;
}

/** An `InferParameter`'s value: the member its `parameter_choice` names (64-bit integers as numbers). @internal */
export function parameterValue(p: InferParameter): unknown {
  const choice = p.parameter_choice;
  if (choice === undefined) return undefined;
  const value = p[choice];
  return choice === 'int64_param' || choice === 'uint64_param' ? Number(value) : value;
}

/**
 * A request's `parameters` as plain values. Triton's `timeout` (microseconds) becomes `timeout_ms`
 * when that is not given; keys starting `triton_` are Triton's own and are left out.
 * @internal
 */
export function plainParameters(map: Record<string, InferParameter> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, p] of Object.entries(map ?? {})) if (!key.startsWith('triton_')) out[key] = parameterValue(p);
  if (out.timeout !== undefined) {
    if (out.timeout_ms === undefined) out.timeout_ms = typeof out.timeout === 'number' ? out.timeout / 1000 : out.timeout;
    delete out.timeout;
  }
  return out;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Raw entries must match the inputs one for one, and rule out typed contents (the protocol's rule). */
function checkRaw(inputs: readonly InferInputTensor[], raw: readonly Uint8Array[]): void {
  if (raw.length === 0) return;
  if (raw.length !== inputs.length) {
    throw invalidArgument('invalid_request', `raw_input_contents has ${raw.length} entries, but the request has ${inputs.length} inputs; send one entry per input, in the order of inputs`);
  }
  const typed = inputs.find((t) => t.contents !== undefined && t.contents !== null);
  if (typed !== undefined) {
    throw invalidArgument('invalid_request', `input ${JSON.stringify(typed.name ?? '')} has typed contents, but the request also has raw_input_contents; send each input one way: all raw, or all typed`);
  }
}

/**
 * Turns a `ModelInferRequest` into the protocol's request (raw entries as the binary tensor
 * extension lays them out: `parameters.binary_data_size` per input, bytes in input order) and
 * checks it with the serving core's decoder, so that gRPC and REST accept and refuse the same
 * requests with the same messages.
 * @internal
 */
export function decodeInferRequest(msg: ModelInferRequest, modelName: string, host: InferenceServable, maxElements: number): GrpcInferRequest {
  const inputs = msg.inputs ?? [];
  const raw = msg.raw_input_contents ?? [];
  checkRaw(inputs, raw);
  const useRaw = raw.length > 0;
  const parameters = plainParameters(msg.parameters);
  if (useRaw) parameters.binary_data_output = true; // raw in, raw out: Triton's clients read only raw_output_contents
  const body = {
    ...(msg.id === undefined || msg.id === '' ? {} : { id: msg.id }),
    parameters,
    inputs: inputs.map((t, i) => ({
      name: t.name ?? '',
      datatype: t.datatype ?? '',
      shape: (t.shape ?? []).map(Number),
      ...(useRaw ? { parameters: { binary_data_size: (raw[i] as Uint8Array).length } } : { data: contentsData(t.name ?? '', t.datatype, t.contents) }),
    })),
    ...(msg.outputs === undefined || msg.outputs.length === 0 ? {} : { outputs: msg.outputs.map((o) => ({ name: o.name ?? '' })) }),
  };
  const binary = !useRaw ? undefined : raw.length === 1 ? asBuffer(raw[0] as Uint8Array) : Buffer.concat(raw);
  const request = decodeRequest(body, { modelName, host, maxElements, binary });
  return { request, raw: request.binaryDefault };
}

/**
 * The `ModelInferResponse` for one request's results: raw (one `raw_output_contents` entry per
 * output, in order) when `raw`, or when an output's datatype has no typed field (FP16); else typed
 * `contents`.
 * @internal
 */
export function encodeInferResponse(modelName: string, modelVersion: string, request: DecodedRequest, results: Record<string, TensorLike>, raw: boolean): ModelInferResponse {
  const outputs = answerOutputs(request, results);
  const typed = raw ? [] : outputs.map((o) => tensorContents(o.datatype, o.tensor.data as TensorData));
  const asRaw = raw || typed.some((c) => c === undefined);
  return {
    model_name: modelName,
    model_version: modelVersion,
    id: request.id ?? '',
    parameters: {},
    outputs: outputs.map((o, i) => ({ name: o.name, datatype: o.datatype, shape: [...o.tensor.dims], ...(asRaw ? {} : { contents: typed[i] }) })),
    raw_output_contents: asRaw ? outputs.map((o) => encodeBinary(o.datatype, o.tensor.data as TensorData)) : [],
  };
}

/**
 * The elements of one input, whichever way it came (raw bytes or typed contents), as plain values
 * (64-bit integers as numbers): what a generation request's token ids and text are read from.
 * @internal
 */
export function inputValues(t: InferInputTensor, raw: Uint8Array | undefined): unknown[] {
  const name = JSON.stringify(t.name ?? '');
  if (raw === undefined) return contentsData(t.name ?? '', t.datatype, t.contents).map((v) => (typeof v === 'string' && (t.datatype === 'INT64' || t.datatype === 'UINT64') ? Number(v) : v));
  if (!isKServeDatatype(t.datatype)) throw invalidArgument('invalid_datatype', `input ${name}: "datatype" must be a KServe datatype, got ${JSON.stringify(t.datatype ?? '')}`);
  let count = 1;
  for (const d of t.shape ?? []) count *= Number(d);
  const data = decodeBinary(t.datatype, raw, count);
  if (typeof data === 'string') throw invalidArgument('data_length', `input ${name}: ${data}`);
  return Array.from(data as ArrayLike<unknown>, (v) => (typeof v === 'bigint' ? Number(v) : v));
}

/** The raw entry of input `i`, when the request sends raw inputs (checked as for inference). @internal */
export function rawEntries(msg: ModelInferRequest): readonly Uint8Array[] {
  const raw = msg.raw_input_contents ?? [];
  checkRaw(msg.inputs ?? [], raw);
  return raw;
}
