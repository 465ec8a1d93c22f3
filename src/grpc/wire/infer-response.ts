import type { InferOutputTensor, InferParameter, InferTensorContents, Int64, ModelInferResponse, ModelStreamInferResponse } from '../messages';
import { ProtoWriter } from './writer';

/**
 * `ModelInferResponse` and `ModelStreamInferResponse` encoded by hand: the gRPC server's
 * `responseSerialize` for `ModelInfer` and `ModelStreamInfer`. protobufjs would first build a
 * message object from ours (`fromObject`), then a list of write operations, then the buffer; this
 * writes the buffer once, raw output bytes copied straight in.
 */

const MEMBERS = ['bool_param', 'int64_param', 'string_param', 'double_param', 'uint64_param'] as const;

function parameter(w: ProtoWriter, p: InferParameter): void {
  // The member `parameter_choice` names, or (an object built without it) the one that is set.
  switch (p.parameter_choice ?? MEMBERS.find((k) => p[k] !== undefined)) {
    case 'bool_param':
      w.tag(1, 0);
      w.uint32(p.bool_param === true ? 1 : 0);
      break;
    case 'int64_param':
      w.tag(2, 0);
      w.int64(p.int64_param ?? 0);
      break;
    case 'string_param':
      w.string(3, p.string_param ?? '', true);
      break;
    case 'double_param':
      w.tag(4, 1);
      w.double(p.double_param ?? 0);
      break;
    case 'uint64_param':
      w.tag(5, 0);
      w.int64(p.uint64_param ?? 0);
      break;
    default:
  }
}

function parameters(w: ProtoWriter, field: number, map: Record<string, InferParameter> | undefined): void {
  for (const [key, value] of Object.entries(map ?? {})) {
    const entry = w.begin(field);
    w.string(1, key);
    const v = w.begin(2);
    parameter(w, value);
    w.finish(v);
    w.finish(entry);
  }
}

/** A packed repeated scalar; proto3 leaves an empty one out. */
function packed<T>(w: ProtoWriter, field: number, values: readonly T[] | undefined, write: (v: T) => void): void {
  if (values === undefined || values.length === 0) return;
  const start = w.begin(field);
  for (const v of values) write(v);
  w.finish(start);
}

function contents(w: ProtoWriter, c: InferTensorContents): void {
  packed(w, 1, c.bool_contents, (v) => w.uint32(v ? 1 : 0));
  packed(w, 2, c.int_contents, (v) => w.int64(v));
  packed(w, 3, c.int64_contents, (v: Int64) => w.int64(v));
  packed(w, 4, c.uint_contents, (v) => w.uint32(v));
  packed(w, 5, c.uint64_contents, (v: Int64) => w.int64(v));
  packed(w, 6, c.fp32_contents, (v) => w.float(v));
  packed(w, 7, c.fp64_contents, (v) => w.double(v));
  for (const b of c.bytes_contents ?? []) w.bytes(8, b);
}

function output(w: ProtoWriter, o: InferOutputTensor): void {
  w.string(1, o.name);
  w.string(2, o.datatype);
  packed(w, 3, o.shape, (v) => w.int64(v));
  parameters(w, 4, o.parameters);
  if (o.contents !== undefined) {
    const start = w.begin(5);
    contents(w, o.contents);
    w.finish(start);
  }
}

function inferResponse(w: ProtoWriter, m: ModelInferResponse): void {
  w.string(1, m.model_name);
  w.string(2, m.model_version);
  w.string(3, m.id);
  parameters(w, 4, m.parameters);
  for (const o of m.outputs) {
    const start = w.begin(5);
    output(w, o);
    w.finish(start);
  }
  for (const b of m.raw_output_contents) w.bytes(6, b);
}

/** The raw bytes plus room for the rest: one buffer for the usual answer. */
function expectedSize(m: ModelInferResponse | undefined): number {
  let n = 256;
  for (const b of m?.raw_output_contents ?? []) n += b.length + 6;
  return n;
}

/** @internal */
export function encodeModelInferResponse(m: ModelInferResponse): Buffer {
  const w = new ProtoWriter(expectedSize(m));
  inferResponse(w, m);
  return w.result();
}

/** @internal */
export function encodeModelStreamInferResponse(m: ModelStreamInferResponse): Buffer {
  const w = new ProtoWriter(expectedSize(m.infer_response));
  w.string(1, m.error_message);
  if (m.infer_response !== undefined) {
    const start = w.begin(2);
    inferResponse(w, m.infer_response);
    w.finish(start);
  }
  return w.result();
}
