import * as protoLoader from '@grpc/proto-loader';
import { INFERENCE_PROTO, SERVICE_NAME } from '../../src/grpc';
import { LOADER_OPTIONS, type InferParameter, type InferTensorContents, type ModelInferRequest, type ModelInferResponse } from '../../src/grpc/messages';
import { decodeModelInferRequest } from '../../src/grpc/wire/infer-request';
import { encodeModelInferResponse, encodeModelStreamInferResponse } from '../../src/grpc/wire/infer-response';
import { MalformedMessage } from '../../src/grpc/wire/reader';
import { ProtoWriter } from '../../src/grpc/wire/writer';
import { rng } from '../../src/engine/simulate'; // seeded: the same messages on every run

// The hand-written codec of ModelInfer must read and write exactly what protobufjs (through
// @grpc/proto-loader, with the server's options) reads and writes: checked here on messages that
// use every field and every kind of value, against protobufjs as the reference.

type Method = { requestSerialize(m: unknown): Buffer; requestDeserialize(b: Buffer): unknown; responseDeserialize(b: Buffer): unknown };
const reference = protoLoader.loadSync(INFERENCE_PROTO, LOADER_OPTIONS)[SERVICE_NAME] as unknown as Record<string, Method>;
const infer = reference.ModelInfer!;
const stream = reference.ModelStreamInfer!;

const INT64S = ['0', '1', '-1', '300', '-9223372036854775808', '9223372036854775807', '9007199254740993', '-4294967296', '4294967296'];
const UINT64S = ['0', '1', '18446744073709551615', '9007199254740993', '4294967296', '4294967295'];

function generate(rand: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const count = (max: number): number => Math.floor(rand() * (max + 1));
  const text = (): string => pick(['', 'x', 'input_ids', 'naïve ✓', 'a'.repeat(200)]);
  const param = (): InferParameter =>
    pick<() => InferParameter>([
      () => ({ parameter_choice: 'bool_param', bool_param: rand() < 0.5 }),
      () => ({ parameter_choice: 'int64_param', int64_param: pick(INT64S) }),
      () => ({ parameter_choice: 'string_param', string_param: text() }),
      () => ({ parameter_choice: 'double_param', double_param: pick([0, -0.5, 1e300, Math.PI]) }),
      () => ({ parameter_choice: 'uint64_param', uint64_param: pick(UINT64S) }),
    ])();
  const params = (): Record<string, InferParameter> | undefined => {
    const n = count(3);
    if (n === 0) return undefined;
    const out: Record<string, InferParameter> = {};
    for (let i = 0; i < n; i++) out[`k${i}${text()}`] = param();
    return out;
  };
  const contents = (): InferTensorContents => {
    const c: InferTensorContents = {};
    if (rand() < 0.3) c.bool_contents = Array.from({ length: 1 + count(4) }, () => rand() < 0.5);
    if (rand() < 0.3) c.int_contents = Array.from({ length: 1 + count(4) }, () => pick([0, -1, 2147483647, -2147483648, 5]));
    if (rand() < 0.3) c.int64_contents = Array.from({ length: 1 + count(4) }, () => pick(INT64S));
    if (rand() < 0.3) c.uint_contents = Array.from({ length: 1 + count(4) }, () => pick([0, 1, 4294967295, 128]));
    if (rand() < 0.3) c.uint64_contents = Array.from({ length: 1 + count(4) }, () => pick(UINT64S));
    if (rand() < 0.3) c.fp32_contents = Array.from({ length: 1 + count(4) }, () => pick([0, 1.5, -2.25, 3.4028234663852886e38]));
    if (rand() < 0.3) c.fp64_contents = Array.from({ length: 1 + count(4) }, () => pick([0, Math.E, -1e-300]));
    if (rand() < 0.3) c.bytes_contents = Array.from({ length: 1 + count(3) }, () => Buffer.from(text()));
    return c;
  };
  return { pick, count, text, params, contents, rand };
}

function randomRequest(seed: number): ModelInferRequest {
  const g = generate(rng(seed));
  const m: ModelInferRequest = { model_name: g.text(), model_version: g.pick(['', '1', '12']), id: g.text() };
  const p = g.params();
  if (p !== undefined) m.parameters = p;
  m.inputs = Array.from({ length: g.count(3) }, () => ({
    name: g.text(),
    datatype: g.pick(['FP32', 'INT64', 'BYTES', '']),
    shape: Array.from({ length: g.count(4) }, () => g.pick(INT64S)),
    ...(g.rand() < 0.5 ? { parameters: g.params() } : {}),
    ...(g.rand() < 0.5 ? { contents: g.contents() } : {}),
  }));
  m.outputs = Array.from({ length: g.count(2) }, () => ({ name: g.text(), ...(g.rand() < 0.5 ? { parameters: g.params() } : {}) }));
  m.raw_input_contents = Array.from({ length: g.count(3) }, () => Buffer.from(Array.from({ length: g.count(40) }, () => Math.floor(g.rand() * 256))));
  return m;
}

function randomResponse(seed: number): ModelInferResponse {
  const g = generate(rng(seed));
  return {
    model_name: g.text(),
    model_version: g.pick(['', '1']),
    id: g.text(),
    parameters: g.params() ?? {},
    outputs: Array.from({ length: g.count(3) }, () => ({
      name: g.text(),
      datatype: g.pick(['FP32', 'INT64']),
      shape: Array.from({ length: g.count(3) }, () => g.pick([1, 2, 32, 4294967296])),
      ...(g.rand() < 0.5 ? { parameters: g.params() ?? {} } : {}),
      ...(g.rand() < 0.6 ? { contents: g.contents() } : {}),
    })),
    raw_output_contents: Array.from({ length: g.count(2) }, () => Buffer.from(Array.from({ length: g.count(24) }, () => Math.floor(g.rand() * 256)))),
  };
}

/** A copy in a buffer of its own: decoding moves raw bytes within the message it is given. */
const fresh = (b: Buffer): Buffer => Buffer.from(b);

describe('decodeModelInferRequest reads what protobufjs reads', () => {
  test.each(Array.from({ length: 60 }, (_, i) => i))('random request %i', (seed) => {
    const wire = infer.requestSerialize(randomRequest(seed));
    expect(decodeModelInferRequest(fresh(wire))).toEqual(infer.requestDeserialize(fresh(wire)));
  });

  test('an empty message is an empty object, as protobufjs reads it with defaults off', () => {
    expect(decodeModelInferRequest(Buffer.alloc(0))).toEqual({});
    expect(infer.requestDeserialize(Buffer.alloc(0))).toEqual({});
  });

  test('repeated scalars sent one per tag (unpacked, which proto3 parsers must accept) read the same as packed', () => {
    const w = new ProtoWriter(64);
    const input = w.begin(5);
    w.string(1, 'x');
    for (const d of [2, 300, -1]) {
      w.tag(3, 0); // shape, unpacked
      w.int64(d);
    }
    const contents = w.begin(5);
    for (const v of [1.5, -2]) {
      w.tag(6, 5); // fp32_contents, unpacked
      w.float(v);
    }
    w.finish(contents);
    w.finish(input);
    const wire = w.result();
    expect(decodeModelInferRequest(fresh(wire))).toEqual({ inputs: [{ name: 'x', shape: ['2', '300', '-1'], contents: { fp32_contents: [1.5, -2] } }] });
    expect(decodeModelInferRequest(fresh(wire))).toEqual(infer.requestDeserialize(fresh(wire)));
  });

  test('unknown fields of every wire type are skipped', () => {
    const w = new ProtoWriter(64);
    w.tag(99, 0);
    w.int64('18446744073709551615');
    w.tag(98, 1);
    w.double(1);
    w.tag(97, 5);
    w.float(1);
    w.string(96, 'ignored');
    w.string(1, 'cls');
    expect(decodeModelInferRequest(w.result())).toEqual({ model_name: 'cls' });
  });
});

describe('raw entries are moved to an 8-byte boundary, so the tensor is viewed in place', () => {
  test('one entry: aligned, bytes intact', () => {
    const bytes = Buffer.from(Array.from({ length: 64 }, (_, i) => i));
    const wire = infer.requestSerialize({ model_name: 'abc', inputs: [{ name: 'x', datatype: 'FP32', shape: [16] }], raw_input_contents: [bytes] });
    const framed = Buffer.concat([Buffer.alloc(5), wire]); // grpc-js hands over the message at offset 5
    const raw = decodeModelInferRequest(framed.subarray(5)).raw_input_contents!;
    expect(raw[0]!.byteOffset % 8).toBe(0);
    expect(Buffer.from(raw[0]!)).toEqual(bytes);
  });

  test('several entries: each aligned where the one before leaves room, every one intact', () => {
    const entries = [17, 3, 40, 1].map((n, k) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + k) & 255)));
    const wire = infer.requestSerialize({ model_name: 'classifier', raw_input_contents: entries });
    for (let shift = 0; shift < 8; shift++) {
      const framed = Buffer.concat([Buffer.alloc(shift), wire]);
      const raw = decodeModelInferRequest(framed.subarray(shift)).raw_input_contents!;
      expect(raw.map((r) => Buffer.from(r))).toEqual(entries);
      expect(raw[0]!.byteOffset % 8).toBe(0); // the model name's 12 bytes before it are room enough
      for (let i = 1; i < raw.length; i++) expect(raw[i]!.byteOffset).toBeGreaterThanOrEqual(raw[i - 1]!.byteOffset + raw[i - 1]!.length);
    }
  });

  test('nothing moves while BYTES contents (views into the message) are in it', () => {
    const wire = infer.requestSerialize({ inputs: [{ name: 's', datatype: 'BYTES', contents: { bytes_contents: [Buffer.from('hello')] } }], raw_input_contents: [Buffer.from('abcdefghij')] });
    const m = decodeModelInferRequest(fresh(wire));
    expect(Buffer.from(m.inputs![0]!.contents!.bytes_contents![0]!).toString()).toBe('hello');
    expect(Buffer.from(m.raw_input_contents![0]!).toString()).toBe('abcdefghij');
  });
});

describe('a message that is not protobuf is refused with a MalformedMessage that says where', () => {
  const wire = infer.requestSerialize({ model_name: 'classifier', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4] }], raw_input_contents: [Buffer.alloc(16)] });

  test.each([
    ['cut inside the raw bytes', wire.subarray(0, wire.length - 3), /^ModelInferRequest is not a valid protobuf message: a field at byte \d+ declares 16 bytes, but 13 are left$/],
    ['cut inside a tag', Buffer.concat([wire, Buffer.from([0x80])]), /^ModelInferRequest is not a valid protobuf message: it ends inside a field at byte \d+$/],
    ['a group (wire type 3)', Buffer.concat([wire, Buffer.from([0xa3, 0x01])]), /^ModelInferRequest is not a valid protobuf message: wire type 3 at byte \d+ \(groups and unknown wire types are not proto3\)$/],
    ['a varint of 11 bytes', Buffer.from([0x08, ...Array(10).fill(0xff), 0x01]), /^ModelInferRequest is not a valid protobuf message: a varint at byte \d+ runs past 10 bytes$/],
    ['raw_input_contents as a varint', Buffer.from([0x38, 0x01]), /^ModelInferRequest is not a valid protobuf message: raw_input_contents has wire type 0$/],
    ['a length past the end', Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), /^ModelInferRequest is not a valid protobuf message: a field at byte 6 declares 4294967295 bytes, but 0 are left$/],
  ])('%s', (_, bytes, message) => {
    let error: unknown;
    try {
      decodeModelInferRequest(fresh(bytes));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MalformedMessage);
    expect((error as Error).message).toMatch(message);
  });
});

describe('encodeModelInferResponse writes what protobufjs reads back', () => {
  test.each(Array.from({ length: 60 }, (_, i) => i))('random response %i', (seed) => {
    const m = randomResponse(seed);
    const back = infer.responseDeserialize(encodeModelInferResponse(m)) as ModelInferResponse;
    // protobufjs reads with defaults off: empty strings (but a oneof member's), maps and lists come back absent.
    const expected = JSON.parse(JSON.stringify(m, (k, v) => ((v === '' && k !== 'string_param') || (k === 'parameters' && Object.keys(v).length === 0) || (Array.isArray(v) && v.length === 0 && k !== 'data') ? undefined : v)));
    expect(JSON.parse(JSON.stringify(back))).toEqual(normalise(expected));
  });

  test('a stream response carries its error message or its response', () => {
    const response = randomResponse(7);
    const back = stream.responseDeserialize(encodeModelStreamInferResponse({ error_message: '', infer_response: response })) as { infer_response: ModelInferResponse };
    expect(back.infer_response.model_name).toBe(response.model_name || undefined);
    expect(back.infer_response.raw_output_contents?.map((b) => Buffer.from(b))).toEqual(response.raw_output_contents.length === 0 ? undefined : response.raw_output_contents);
    expect(stream.responseDeserialize(encodeModelStreamInferResponse({ error_message: 'input "x": bad' }))).toEqual({ error_message: 'input "x": bad' });
  });

  test('int64 values: negative, past 2^53 and past 2^63 as two’s complement, as decimal strings or numbers', () => {
    const back = infer.responseDeserialize(
      encodeModelInferResponse({
        model_name: 'm',
        model_version: '1',
        id: '',
        parameters: { a: { parameter_choice: 'int64_param', int64_param: '-9223372036854775808' }, b: { parameter_choice: 'uint64_param', uint64_param: '18446744073709551615' }, c: { parameter_choice: 'bool_param', bool_param: false } },
        outputs: [{ name: 'y', datatype: 'INT64', shape: [4294967296, 1], contents: { int64_contents: ['-1', 9007199254740993n.toString(), 5], int_contents: [-2147483648] } }],
        raw_output_contents: [],
      }),
    ) as ModelInferResponse;
    expect(back.parameters).toEqual({ a: { parameter_choice: 'int64_param', int64_param: '-9223372036854775808' }, b: { parameter_choice: 'uint64_param', uint64_param: '18446744073709551615' }, c: { parameter_choice: 'bool_param', bool_param: false } });
    expect(back.outputs[0]).toEqual({ name: 'y', datatype: 'INT64', shape: ['4294967296', '1'], contents: { int64_contents: ['-1', '9007199254740993', '5'], int_contents: [-2147483648] } });
  });
});

/** Buffers through JSON, as protobufjs's Buffers come out of the same JSON round trip, and 64-bit integers as strings. */
function normalise(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalise);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === 'shape' ? (x as unknown[]).map(String) : normalise(x)]));
  return v;
}
