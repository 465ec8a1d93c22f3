import type { InferInputTensor, InferParameter, InferTensorContents, ModelInferRequest } from '../messages';
import { int64String, ProtoReader } from './reader';

/**
 * `ModelInferRequest` decoded by hand, into the very objects `@grpc/proto-loader` makes with the
 * server's `LOADER_OPTIONS` (field names as in the .proto, 64-bit integers as decimal strings,
 * `parameter_choice` beside a parameter's value, absent fields left out), without protobufjs's two
 * object graphs per message (decode, then `toObject`) and its `Long`s. This is the hot path of
 * every gRPC inference call, and the raw tensor bytes stay views into the message.
 */

type Out = NonNullable<ModelInferRequest['outputs']>[number];

function parameter(r: ProtoReader, end: number): InferParameter {
  let p: InferParameter = {};
  while (r.pos < end) {
    const tag = r.uint32(end);
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        r.varint(end);
        p = { parameter_choice: 'bool_param', bool_param: r.lo !== 0 || r.hi !== 0 };
        break;
      case 2:
        r.varint(end);
        p = { parameter_choice: 'int64_param', int64_param: int64String(r.lo, r.hi, true) };
        break;
      case 3:
        p = { parameter_choice: 'string_param', string_param: r.string(end) };
        break;
      case 4:
        p = { parameter_choice: 'double_param', double_param: wire === 1 ? r.double(end) : r.fail(`double_param has wire type ${wire}`) };
        break;
      case 5:
        r.varint(end);
        p = { parameter_choice: 'uint64_param', uint64_param: int64String(r.lo, r.hi, false) };
        break;
      default:
        r.skip(wire, end);
    }
  }
  return p;
}

/** One entry of a `map<string, InferParameter>` into `map`. */
function mapEntry(r: ProtoReader, end: number, map: Record<string, InferParameter>): void {
  let key = '';
  let value: InferParameter = {};
  while (r.pos < end) {
    const tag = r.uint32(end);
    if (tag === 10) key = r.string(end);
    else if (tag === 18) value = parameter(r, r.delimited(end));
    else r.skip(tag & 7, end);
  }
  map[key] = value;
}

/** A repeated scalar, packed (proto3's default) or one element per tag, appended to `into`. */
function repeated<T>(r: ProtoReader, wire: number, elementWire: number, end: number, into: T[], read: (stop: number) => T): T[] {
  if (wire === 2 && elementWire !== 2) {
    const stop = r.delimited(end);
    while (r.pos < stop) into.push(read(stop));
  } else if (wire === elementWire) into.push(read(end));
  else r.fail(`a repeated field with wire type ${wire} at byte ${r.pos}`);
  return into;
}

function contents(r: ProtoReader, end: number): InferTensorContents {
  const c: InferTensorContents = {};
  while (r.pos < end) {
    const tag = r.uint32(end);
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        c.bool_contents = repeated(r, wire, 0, end, c.bool_contents ?? [], (s) => (r.varint(s), r.lo !== 0 || r.hi !== 0));
        break;
      case 2:
        c.int_contents = repeated(r, wire, 0, end, c.int_contents ?? [], (s) => (r.varint(s), r.lo | 0));
        break;
      case 3:
        c.int64_contents = repeated(r, wire, 0, end, c.int64_contents ?? [], (s) => (r.varint(s), int64String(r.lo, r.hi, true)));
        break;
      case 4:
        c.uint_contents = repeated(r, wire, 0, end, c.uint_contents ?? [], (s) => (r.varint(s), r.lo));
        break;
      case 5:
        c.uint64_contents = repeated(r, wire, 0, end, c.uint64_contents ?? [], (s) => (r.varint(s), int64String(r.lo, r.hi, false)));
        break;
      case 6:
        c.fp32_contents = repeated(r, wire, 5, end, c.fp32_contents ?? [], (s) => r.float(s));
        break;
      case 7:
        c.fp64_contents = repeated(r, wire, 1, end, c.fp64_contents ?? [], (s) => r.double(s));
        break;
      case 8:
        c.bytes_contents = repeated(r, wire, 2, end, c.bytes_contents ?? [], (s) => r.bytes(s));
        break;
      default:
        r.skip(wire, end);
    }
  }
  return c;
}

function input(r: ProtoReader, end: number): InferInputTensor {
  const t: InferInputTensor = {};
  while (r.pos < end) {
    const tag = r.uint32(end);
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        t.name = r.string(end);
        break;
      case 2:
        t.datatype = r.string(end);
        break;
      case 3:
        t.shape = repeated(r, wire, 0, end, t.shape ?? [], (s) => (r.varint(s), int64String(r.lo, r.hi, true)));
        break;
      case 4:
        mapEntry(r, r.delimited(end), (t.parameters ??= {}));
        break;
      case 5:
        t.contents = contents(r, r.delimited(end));
        break;
      default:
        r.skip(wire, end);
    }
  }
  return t;
}

function requestedOutput(r: ProtoReader, end: number): Out {
  const o: Out = {};
  while (r.pos < end) {
    const tag = r.uint32(end);
    if (tag === 10) o.name = r.string(end);
    else if (tag === 18) mapEntry(r, r.delimited(end), (o.parameters ??= {}));
    else r.skip(tag & 7, end);
  }
  return o;
}

/**
 * Moves each raw entry back to an 8-byte boundary of the message's memory, over bytes already
 * decoded (the entry's own tag and length at least), so that the serving core can view the tensor
 * in place instead of copying it out: the gRPC twin of the HTTP route's aligned body. An entry is
 * left where it is when the room before it is taken; the core then copies it, as before.
 */
function alignRaw(message: Buffer, raw: Buffer[]): void {
  let free = message.byteOffset; // the first byte of the message's memory no live view uses
  for (let i = 0; i < raw.length; i++) {
    const entry = raw[i] as Buffer;
    const at = entry.byteOffset;
    const to = at - (at % 8);
    if (at % 8 !== 0 && to >= free) {
      message.copyWithin(to - message.byteOffset, at - message.byteOffset, at - message.byteOffset + entry.length);
      raw[i] = message.subarray(to - message.byteOffset, to - message.byteOffset + entry.length);
    }
    free = (raw[i] as Buffer).byteOffset + entry.length;
  }
}

/**
 * Decodes a `ModelInferRequest` (the gRPC server's `requestDeserialize` for `ModelInfer` and
 * `ModelStreamInfer`). Throws a `MalformedMessage` on bytes that are not protobuf, which grpc-js
 * answers as it answers any undecodable message.
 * @internal
 */
export function decodeModelInferRequest(message: Buffer): ModelInferRequest {
  const r = new ProtoReader(message, 'ModelInferRequest');
  const end = message.length;
  const m: ModelInferRequest = {};
  let typedBytes = false;
  while (r.pos < end) {
    const tag = r.uint32(end);
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        m.model_name = r.string(end);
        break;
      case 2:
        m.model_version = r.string(end);
        break;
      case 3:
        m.id = r.string(end);
        break;
      case 4:
        mapEntry(r, r.delimited(end), (m.parameters ??= {}));
        break;
      case 5: {
        const t = input(r, r.delimited(end));
        typedBytes ||= t.contents?.bytes_contents !== undefined;
        (m.inputs ??= []).push(t);
        break;
      }
      case 6:
        (m.outputs ??= []).push(requestedOutput(r, r.delimited(end)));
        break;
      case 7:
        (m.raw_input_contents ??= []).push(wire === 2 ? r.bytes(end) : r.fail(`raw_input_contents has wire type ${wire}`));
        break;
      default:
        r.skip(wire, end);
    }
  }
  // BYTES contents are views into the message too: nothing may move over them.
  if (m.raw_input_contents !== undefined && !typedBytes) alignRaw(message, m.raw_input_contents as Buffer[]);
  return m;
}
