import type { TensorData } from '../tensor/dtypes';
import type { TensorLike } from '../tensor/tensor-like';
import { decodeBinary } from './raw-data';
import { isKServeDatatype, kserveDatatype, KSERVE_DATATYPES } from './datatypes';
import { invalidArgument } from './errors';
import { parseJsonData } from './json-data';
import type { TensorSignature } from '../core/servable';
import type { InferenceServable } from './servables';

/** An output the client asked for, and whether it wants it as binary data. @internal */
export interface RequestedOutput {
  readonly name: string;
  readonly binary: boolean;
}

/** A request checked against the model and turned into feeds. @internal */
export interface DecodedRequest {
  /** The request's `id`, echoed in the answer. */
  readonly id: string | undefined;
  /** Tensors by input name, ready for `host.inference`. */
  readonly feeds: Record<string, TensorLike>;
  /** The outputs to answer with; `undefined` means all, in the form `binaryDefault` says. */
  readonly outputs: readonly RequestedOutput[] | undefined;
  /** `parameters.binary_data_output`: answer every output as binary data. */
  readonly binaryDefault: boolean;
  /** `parameters.timeout_ms`, when given. */
  readonly timeoutMs: number | undefined;
}

/** What the decoder needs besides the body. @internal */
export interface DecodeContext {
  readonly modelName: string;
  readonly host: InferenceServable;
  readonly maxElements: number;
  /** The binary section after the JSON header (binary extension), if any. */
  readonly binary: Buffer | undefined;
}

const q = (s: string): string => JSON.stringify(s);
const list = (xs: readonly { name: string }[]): string => xs.map((x) => q(x.name)).join(', ');

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function shapeText(dims: ReadonlyArray<number | string>): string {
  return `[${dims.join(', ')}]`;
}

/**
 * Checks a parsed KServe v2 inference request against the model's metadata (names, datatypes,
 * ranks, fixed dims, batch size, element counts) and builds the feeds. Every problem is a 400
 * `'invalid-argument'` `ServingError` whose message names the input and says what was expected and what came.
 * @internal
 */
export function decodeRequest(body: unknown, ctx: DecodeContext): DecodedRequest {
  const { modelName, host } = ctx;
  const where = `model ${q(modelName)}`;
  if (!isRecord(body)) throw invalidArgument('invalid_request', `the request body must be a JSON object with an "inputs" array, got ${Array.isArray(body) ? 'an array' : typeof body}`);
  const { inputs } = body;
  if (!Array.isArray(inputs) || inputs.length === 0) {
    throw invalidArgument('invalid_request', `the request must have a non-empty "inputs" array; ${where} takes ${list(host.model.inputs)}`);
  }
  const id = body.id === undefined ? undefined : typeof body.id === 'string' ? body.id : undefined;
  if (body.id !== undefined && id === undefined) throw invalidArgument('invalid_request', '"id" must be a string');
  const params = body.parameters === undefined ? {} : body.parameters;
  if (!isRecord(params)) throw invalidArgument('invalid_request', '"parameters" must be an object');

  // Pass 1: names, so that a typo is reported before anything else about the tensors.
  const byName = new Map<string, { spec: TensorSignature; raw: Record<string, unknown> }>();
  inputs.forEach((raw: unknown, i) => {
    if (!isRecord(raw)) throw invalidArgument('invalid_request', `inputs[${i}] must be an object { name, shape, datatype, data }`);
    if (typeof raw.name !== 'string') throw invalidArgument('invalid_request', `inputs[${i}] has no "name" (a string)`);
    const spec = host.model.inputs.find((t) => t.name === raw.name);
    if (spec === undefined) throw invalidArgument('unknown_input', `input ${q(raw.name)} is not an input of ${where}; its inputs are ${list(host.model.inputs)}`);
    if (byName.has(raw.name)) throw invalidArgument('duplicate_input', `input ${q(raw.name)} is given twice`);
    byName.set(raw.name, { spec, raw });
  });
  const missing = host.model.inputs.filter((t) => !byName.has(t.name));
  if (missing.length > 0) {
    throw invalidArgument('missing_input', `${where} needs input${missing.length > 1 ? 's' : ''} ${list(missing)}, which the request does not give; it takes ${list(host.model.inputs)}`);
  }

  // Pass 2: datatype, shape and size, all before any data is converted.
  const maxBatch = host.options?.maxBatchSize ?? Infinity;
  let total = 0;
  let batch: { size: number; input: string } | undefined;
  const checked = [...byName.values()].map(({ spec, raw }) => {
    const name = `input ${q(spec.name)}`;
    const expected = kserveDatatype(spec.dtype);
    if (expected === undefined) throw invalidArgument('unsupported_datatype', `${name} has type ${spec.dtype}, which the KServe protocol cannot carry`);
    if (!isKServeDatatype(raw.datatype)) {
      throw invalidArgument('invalid_datatype', `${name}: "datatype" must be one of ${Object.keys(KSERVE_DATATYPES).join(', ')}; got ${JSON.stringify(raw.datatype) ?? 'nothing'}`);
    }
    if (raw.datatype !== expected) throw invalidArgument('wrong_datatype', `${name}: expected datatype ${expected}, got ${raw.datatype}`);
    const shape = raw.shape;
    if (!Array.isArray(shape) || shape.some((d) => typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0)) {
      throw invalidArgument('invalid_shape', `${name}: "shape" must be an array of non-negative integers, got ${JSON.stringify(shape) ?? 'nothing'}`);
    }
    const dims = shape as number[];
    if (dims.length !== spec.dims.length) {
      throw invalidArgument('wrong_shape', `${name}: expected rank ${spec.dims.length} (dims ${shapeText(spec.dims)}), got shape ${shapeText(dims)} of rank ${dims.length}`);
    }
    spec.dims.forEach((want, axis) => {
      if (typeof want === 'number' && want >= 0 && dims[axis] !== want) {
        throw invalidArgument('wrong_shape', `${name}: expected dims ${shapeText(spec.dims)}, got shape ${shapeText(dims)} (axis ${axis} must be ${want})`);
      }
    });
    if (typeof spec.batchAxis === 'number') {
      const size = dims[spec.batchAxis] as number;
      if (size < 1 || size > maxBatch) {
        throw invalidArgument('wrong_shape', `${name}: the batch dimension (axis ${spec.batchAxis} of ${shapeText(dims)}) must be from 1 to maxBatchSize ${maxBatch}, got ${size}`);
      }
      if (batch !== undefined && batch.size !== size) {
        throw invalidArgument('wrong_shape', `${name} has batch size ${size}, but input ${q(batch.input)} has ${batch.size}; every batched input must have the same batch size`);
      }
      batch ??= { size, input: spec.name };
    }
    let count = 1;
    for (const d of dims) count *= d;
    total += count;
    if (total > ctx.maxElements) {
      throw invalidArgument('too_many_elements', `the request has more than ${ctx.maxElements} tensor elements (maxElements); ${name} alone has ${count} for shape ${shapeText(dims)}`);
    }
    return { spec, raw, datatype: raw.datatype, dims, count, name };
  });

  // Pass 3: data, from JSON or from the binary section in input order.
  const feeds: Record<string, TensorLike> = {};
  let offset = 0;
  for (const { spec, raw, datatype, dims, count, name } of checked) {
    const binarySize = isRecord(raw.parameters) ? raw.parameters.binary_data_size : undefined;
    let data: TensorData | string;
    if (binarySize !== undefined) {
      if (typeof binarySize !== 'number' || !Number.isSafeInteger(binarySize) || binarySize < 0) {
        throw invalidArgument('invalid_request', `${name}: "parameters.binary_data_size" must be a non-negative integer, got ${JSON.stringify(binarySize)}`);
      }
      if (raw.data !== undefined) throw invalidArgument('invalid_request', `${name} has both "data" and "parameters.binary_data_size"; send one`);
      const section = ctx.binary ?? Buffer.alloc(0);
      if (offset + binarySize > section.length) {
        throw invalidArgument('binary_size', `${name}: binary_data_size ${binarySize} runs past the ${section.length} bytes of binary data after the header`);
      }
      data = decodeBinary(datatype, section.subarray(offset, offset + binarySize), count);
      offset += binarySize;
    } else {
      if (raw.data === undefined) throw invalidArgument('invalid_request', `${name} has no "data" (and no "parameters.binary_data_size")`);
      data = parseJsonData(datatype, raw.data, count, `${name} (shape ${shapeText(dims)})`);
    }
    if (typeof data === 'string') throw invalidArgument('data_length', `${name} (shape ${shapeText(dims)}): ${data}`);
    feeds[spec.name] = { type: KSERVE_DATATYPES[datatype], data, dims };
  }
  const binaryLength = ctx.binary?.length ?? 0;
  if (offset !== binaryLength) {
    throw invalidArgument('binary_size', `the inputs' binary_data_size add up to ${offset} bytes, but ${binaryLength} bytes of binary data follow the header`);
  }

  const binaryDefault = params.binary_data_output === true;
  return { id, feeds, outputs: decodeOutputs(body.outputs, host, where, binaryDefault), binaryDefault, timeoutMs: decodeTimeout(params.timeout_ms) };
}

function decodeOutputs(raw: unknown, host: InferenceServable, where: string, binaryDefault: boolean): RequestedOutput[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) throw invalidArgument('invalid_request', '"outputs" must be an array of { name }');
  const seen = new Set<string>();
  return raw.map((o: unknown, i) => {
    if (!isRecord(o) || typeof o.name !== 'string') throw invalidArgument('invalid_request', `outputs[${i}] must be an object { name }`);
    if (!host.model.outputs.some((t) => t.name === o.name)) {
      throw invalidArgument('unknown_output', `output ${q(o.name)} is not an output of ${where}; its outputs are ${list(host.model.outputs)}`);
    }
    if (seen.has(o.name)) throw invalidArgument('invalid_request', `output ${q(o.name)} is asked for twice`);
    seen.add(o.name);
    // A per-output `binary_data` overrides the request-wide `binary_data_output`, as in Triton.
    const own = isRecord(o.parameters) ? o.parameters.binary_data : undefined;
    return { name: o.name, binary: typeof own === 'boolean' ? own : binaryDefault };
  });
}

function decodeTimeout(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'number' || !(raw > 0)) throw invalidArgument('invalid_request', `"parameters.timeout_ms" must be a positive number of milliseconds, got ${JSON.stringify(raw)}`);
  return raw;
}
