import { ConfigSyntaxError, parseTextFormat, type TextField, type TextValue } from './text-format';

/**
 * The part of Triton's `ModelConfig` (model_config.proto) that microbatch reads, in Triton's JSON
 * shape (proto field names). Fields microbatch does not use are warned about and left out.
 */
export interface TritonModelConfig {
  name?: string;
  platform?: string;
  backend?: string;
  max_batch_size?: number;
  input?: TritonTensorConfig[];
  output?: TritonTensorConfig[];
  dynamic_batching?: TritonDynamicBatching;
  instance_group?: Array<{ name?: string; kind?: string; count?: number; gpus?: number[] }>;
  version_policy?: { latest?: { num_versions?: number }; all?: Record<string, never>; specific?: { versions?: number[] } };
  model_warmup?: Array<{ name?: string; batch_size?: number; count?: number; inputs?: Record<string, { data_type?: string; dims?: number[]; zero_data?: boolean; random_data?: boolean; input_data_file?: string }> }>;
  parameters?: Record<string, { string_value?: string }>;
  default_model_filename?: string;
  response_cache?: { enable?: boolean };
}

/** An `input` or `output` entry of a {@link TritonModelConfig}. */
export interface TritonTensorConfig {
  name?: string;
  data_type?: string;
  dims?: number[];
  format?: string;
  reshape?: { shape?: number[] };
  optional?: boolean;
}

/** A queue policy of `dynamic_batching` (the default one or a priority level's). */
export interface TritonQueuePolicy {
  timeout_action?: string;
  default_timeout_microseconds?: number;
  allow_timeout_override?: boolean;
  max_queue_size?: number;
}

/** `dynamic_batching` of a {@link TritonModelConfig}. */
export interface TritonDynamicBatching {
  preferred_batch_size?: number[];
  max_queue_delay_microseconds?: number;
  preserve_ordering?: boolean;
  priority_levels?: number;
  default_priority_level?: number;
  default_queue_policy?: TritonQueuePolicy;
  priority_queue_policy?: Record<string, TritonQueuePolicy>;
}

type Scalar = 'string' | 'bool' | 'int32' | 'uint32' | 'int64' | 'uint64';
type FieldType = Scalar | 'unused' | { readonly enum: readonly string[] } | { readonly message: Schema } | { readonly map: { readonly key: 'string' | 'uint64'; readonly value: FieldType } };
interface FieldSpec {
  readonly type: FieldType;
  readonly repeated?: true;
  /** Fields of one `oneof`: at most one may be set. */
  readonly oneof?: string;
}
type Schema = { readonly [field: string]: FieldSpec };

// Enum names in number order, so that a number given for an enum picks the same name.
const DATA_TYPES = ['TYPE_INVALID', 'TYPE_BOOL', 'TYPE_UINT8', 'TYPE_UINT16', 'TYPE_UINT32', 'TYPE_UINT64', 'TYPE_INT8', 'TYPE_INT16', 'TYPE_INT32', 'TYPE_INT64', 'TYPE_FP16', 'TYPE_FP32', 'TYPE_FP64', 'TYPE_STRING', 'TYPE_BF16'];
const s = (type: FieldType, extra: Omit<FieldSpec, 'type'> = {}): FieldSpec => ({ type, ...extra });
const QUEUE_POLICY: Schema = {
  timeout_action: s({ enum: ['REJECT', 'DELAY'] }),
  default_timeout_microseconds: s('uint64'),
  allow_timeout_override: s('bool'),
  max_queue_size: s('uint32'),
};
const TENSOR: Schema = {
  name: s('string'),
  data_type: s({ enum: DATA_TYPES }),
  dims: s('int64', { repeated: true }),
  format: s({ enum: ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'] }),
  reshape: s({ message: { shape: s('int64', { repeated: true }) } }),
  optional: s('bool'),
  is_shape_tensor: s('unused'),
  allow_ragged_batch: s('unused'),
  label_filename: s('unused'),
  is_non_linear_format_io: s('unused'),
};
const WARMUP_INPUT: Schema = {
  data_type: s({ enum: DATA_TYPES }),
  dims: s('int64', { repeated: true }),
  zero_data: s('bool', { oneof: 'input_data_type' }),
  random_data: s('bool', { oneof: 'input_data_type' }),
  input_data_file: s('string', { oneof: 'input_data_type' }),
};
const MODEL_CONFIG: Schema = {
  name: s('string'),
  platform: s('string'),
  backend: s('string'),
  max_batch_size: s('int32'),
  input: s({ message: TENSOR }, { repeated: true }),
  output: s({ message: TENSOR }, { repeated: true }),
  dynamic_batching: s(
    {
      message: {
        preferred_batch_size: s('int32', { repeated: true }),
        max_queue_delay_microseconds: s('uint64'),
        preserve_ordering: s('bool'),
        priority_levels: s('uint64'),
        default_priority_level: s('uint64'),
        default_queue_policy: s({ message: QUEUE_POLICY }),
        priority_queue_policy: s({ map: { key: 'uint64', value: { message: QUEUE_POLICY } } }),
      },
    },
    { oneof: 'scheduling_choice' },
  ),
  sequence_batching: s('unused', { oneof: 'scheduling_choice' }),
  ensemble_scheduling: s('unused', { oneof: 'scheduling_choice' }),
  instance_group: s(
    { message: { name: s('string'), kind: s({ enum: ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'] }), count: s('int32'), gpus: s('int32', { repeated: true }), secondary_devices: s('unused'), rate_limiter: s('unused'), profile: s('unused'), passive: s('unused'), host_policy: s('unused') } },
    { repeated: true },
  ),
  version_policy: s({
    message: {
      latest: s({ message: { num_versions: s('uint32') } }, { oneof: 'policy_choice' }),
      all: s({ message: {} }, { oneof: 'policy_choice' }),
      specific: s({ message: { versions: s('int64', { repeated: true }) } }, { oneof: 'policy_choice' }),
    },
  }),
  model_warmup: s({ message: { name: s('string'), batch_size: s('uint32'), count: s('uint32'), inputs: s({ map: { key: 'string', value: { message: WARMUP_INPUT } } }) } }, { repeated: true }),
  parameters: s({ map: { key: 'string', value: { message: { string_value: s('string') } } } }),
  default_model_filename: s('string'),
  response_cache: s({ message: { enable: s('bool') } }),
  runtime: s('unused'),
  optimization: s('unused'),
  batch_input: s('unused'),
  batch_output: s('unused'),
  cc_model_filenames: s('unused'),
  metric_tags: s('unused'),
  model_operations: s('unused'),
  model_transaction_policy: s('unused'),
  model_repository_agents: s('unused'),
  model_metrics: s('unused'),
};

const RANGES: Readonly<Record<Exclude<Scalar, 'string' | 'bool'>, readonly [number, number]>> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  // int64 and uint64 beyond 2^53 cannot be told apart as numbers; no config needs them.
  int64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

/** A config value that does not fit its field: the message names the place, what was expected and what came. */
export class ConfigValueError extends Error {
  constructor(where: string, message: string) {
    super(`${where}: ${message}`);
    this.name = 'ConfigValueError';
  }
}

/** What reading a config gave: the config, and a warning per field microbatch does not use. */
export interface ReadConfig {
  readonly config: TritonModelConfig;
  readonly warnings: readonly string[];
}

/** One decoding pass over either syntax: `place` says where a value is, for messages. */
interface Source<V> {
  /** The fields of a message value, each with its name and place, or `undefined` when `value` is no message. */
  fields(value: V): Array<{ name: string; values: V[]; listed: boolean; place: string }> | undefined;
  /** A scalar's kind and content. */
  scalar(value: V): { kind: 'string' | 'number' | 'identifier' | 'bool' | 'other'; value: unknown; shown: string };
  /** A map's entries (`key`, `value`, place). */
  entries(values: V[], place: string, keyType: 'string' | 'uint64', read: (key: V | string, value: V | undefined, at: string) => void): void;
}

function decode<V>(src: Source<V>, value: V, schema: Schema, path: string, place: string, warnings: string[]): Record<string, unknown> {
  const fields = src.fields(value);
  if (fields === undefined) throw new ConfigValueError(place, `expected a message for ${path === '' ? 'the config' : JSON.stringify(path)}, got ${src.scalar(value).shown}`);
  const out: Record<string, unknown> = {};
  const oneofs = new Map<string, string>();
  for (const field of fields) {
    const spec = schema[field.name];
    const full = path === '' ? field.name : `${path}.${field.name}`;
    if (spec === undefined) {
      warnings.push(`${field.place}: unknown field ${JSON.stringify(full)}; ignored`);
      continue;
    }
    if (spec.type === 'unused') {
      warnings.push(`${field.place}: field ${JSON.stringify(full)} is not used by microbatch; ignored`);
      continue;
    }
    if (spec.oneof !== undefined) {
      const other = oneofs.get(spec.oneof);
      if (other !== undefined && other !== field.name) throw new ConfigValueError(field.place, `${JSON.stringify(full)} and ${JSON.stringify(other)} are both set, but only one of ${spec.oneof} may be`);
      oneofs.set(spec.oneof, field.name);
    }
    const type = spec.type;
    if (typeof type === 'object' && 'map' in type) {
      const map = (out[field.name] ??= {}) as Record<string, unknown>;
      src.entries(field.values, field.place, type.map.key, (key, v, at) => {
        const k = typeof key === 'string' ? key : readScalar(src, key, type.map.key, `${full} key`, at);
        map[String(k)] = v === undefined ? {} : readValue(src, v, type.map.value as Exclude<FieldType, 'unused'>, `${full}[${String(k)}]`, at, warnings);
      });
      continue;
    }
    if (spec.repeated !== true && (field.listed || field.values.length > 1 || field.name in out)) {
      throw new ConfigValueError(field.place, `${JSON.stringify(full)} is not a repeated field: give it one value`);
    }
    const values = field.values.map((v) => readValue(src, v, type, full, field.place, warnings));
    out[field.name] = spec.repeated === true ? [...((out[field.name] as unknown[] | undefined) ?? []), ...values] : values[0];
  }
  return out;
}

function readValue<V>(src: Source<V>, value: V, type: Exclude<FieldType, 'unused'>, path: string, place: string, warnings: string[]): unknown {
  if (typeof type === 'object' && 'message' in type) return decode(src, value, type.message, path, place, warnings);
  if (typeof type === 'object' && 'map' in type) throw new ConfigValueError(place, `${JSON.stringify(path)}: a map inside a map is not part of the config`);
  return readScalar(src, value, type, path, place);
}

function readScalar<V>(src: Source<V>, value: V, type: Scalar | { readonly enum: readonly string[] }, path: string, place: string): unknown {
  const got = src.scalar(value);
  const fail = (expected: string): never => {
    throw new ConfigValueError(place, `expected ${JSON.stringify(path)} to be ${expected}, got ${got.shown}`);
  };
  if (typeof type === 'object') {
    if (got.kind === 'number' && Number.isInteger(got.value) && type.enum[got.value as number] !== undefined) return type.enum[got.value as number];
    // Proto JSON enum names are case-insensitive in Triton; the text format's are exact.
    const text = typeof got.value === 'string' ? got.value : undefined;
    const name = text === undefined ? undefined : type.enum.find((e) => e === text || (got.kind === 'string' && e === text.toUpperCase()));
    return name ?? fail(`one of ${type.enum.join(', ')}`);
  }
  if (type === 'string') return got.kind === 'string' ? got.value : fail('a string in quotes');
  if (type === 'bool') {
    if (got.kind === 'bool') return got.value;
    const text = String(got.value);
    if (got.kind === 'identifier' && ['true', 'True', 't'].includes(text)) return true;
    if (got.kind === 'identifier' && ['false', 'False', 'f'].includes(text)) return false;
    if (got.kind === 'number' && (got.value === 0 || got.value === 1)) return got.value === 1;
    return fail('true or false');
  }
  const [min, max] = RANGES[type];
  // Proto JSON writes 64-bit integers as strings.
  const n = got.kind === 'number' ? (got.value as number) : got.kind === 'string' && type.endsWith('64') && /^-?\d+$/.test(got.value as string) ? Number(got.value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) fail(`an integer from ${min} to ${max} (${type})`);
  return n;
}

const TEXT_SOURCE = (textFile: string): Source<TextValue> => {
  const src: Source<TextValue> = {
  fields(value) {
    if (value.kind !== 'message') return undefined;
    const grouped: Array<{ name: string; values: TextValue[]; listed: boolean; place: string }> = [];
    for (const f of value.fields) grouped.push({ name: f.name, values: [f.value], listed: f.listed, place: `${textFile}:${f.at.line}:${f.at.column}` });
    return grouped;
  },
  scalar(value) {
    if (value.kind === 'message') return { kind: 'other', value: undefined, shown: 'a message' };
    const shown = value.kind === 'string' ? JSON.stringify(value.value) : value.kind === 'number' ? value.text : value.value;
    return { kind: value.kind, value: value.value, shown };
  },
  entries(values, place, _keyType, read) {
    for (const entry of values) {
      const at = `${textFile}:${entry.at.line}:${entry.at.column}`;
      if (entry.kind !== 'message') throw new ConfigValueError(at, `expected a map entry { key: ... value: { ... } }, got ${src.scalar(entry).shown}`);
      const key = entry.fields.filter((f) => f.name === 'key');
      const value = entry.fields.filter((f) => f.name === 'value');
      const other = entry.fields.find((f) => f.name !== 'key' && f.name !== 'value');
      if (other !== undefined) throw new ConfigValueError(`${textFile}:${other.at.line}:${other.at.column}`, `a map entry has only "key" and "value", got ${JSON.stringify(other.name)}`);
      if (key.length !== 1 || value.length > 1) throw new ConfigValueError(at, `a map entry needs exactly one "key" and at most one "value" (${place})`);
      read((key[0] as TextField).value, value[0]?.value, at);
    }
  },
  };
  return src;
};

type Json = unknown;
const JSON_SOURCE = (file: string): Source<{ v: Json; path: string }> => {
  const src: Source<{ v: Json; path: string }> = {
    fields({ v, path }) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
      return Object.entries(v).map(([key, value]) => {
        // Proto JSON accepts lowerCamelCase names as well as the proto's own.
        const name = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
        const at = path === '' ? key : `${path}.${key}`;
        const values = Array.isArray(value) ? value.map((x, i) => ({ v: x as Json, path: `${at}[${i}]` })) : [{ v: value as Json, path: at }];
        return { name, values, listed: Array.isArray(value), place: `${file}: at ${at}` };
      });
    },
    scalar({ v }) {
      const kind = typeof v === 'string' ? 'string' : typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'bool' : 'other';
      return { kind, value: v, shown: v === undefined ? 'nothing' : JSON.stringify(v) };
    },
    entries(values, place, _keyType, read) {
      for (const { v, path } of values) {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigValueError(place, `expected an object of entries, got ${JSON.stringify(v)}`);
        for (const [key, value] of Object.entries(v)) read(key, { v: value as Json, path: `${path}.${key}` }, `${file}: at ${path}.${key}`);
      }
    },
  };
  return src;
};

/**
 * Reads a model configuration in the protobuf text format (`config.pbtxt`): throws a
 * {@link ConfigSyntaxError} or {@link ConfigValueError} naming `file`, line and column; fields
 * microbatch does not use come back as warnings.
 *
 * @example
 * ```ts
 * const { config } = readTextConfig('max_batch_size: 8 dynamic_batching { max_queue_delay_microseconds: 500 }', 'config.pbtxt');
 * config.dynamic_batching?.max_queue_delay_microseconds; // 500
 * ```
 */
export function readTextConfig(text: string, file: string): ReadConfig {
  const fields = parseTextFormat(text, file);
  const warnings: string[] = [];
  const config = decode(TEXT_SOURCE(file), { kind: 'message', fields, at: { line: 1, column: 1 } }, MODEL_CONFIG, '', `${file}:1:1`, warnings);
  return { config: config as TritonModelConfig, warnings };
}

/**
 * Reads a model configuration in Triton's JSON form (`config.json`, or the `config` parameter of
 * a load request): proto field names or their lowerCamelCase, 64-bit integers as numbers or
 * strings. Errors name `file` and the field (a syntax error, its line and column).
 *
 * @example
 * ```ts
 * readJsonConfig('{"max_batch_size": 8}', 'config.json').config.max_batch_size; // 8
 * ```
 */
export function readJsonConfig(text: string, file: string): ReadConfig {
  let parsed: Json;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    const message = (e as Error).message;
    const position = /position (\d+)/.exec(message);
    if (position !== null) {
      const before = text.slice(0, Number(position[1]));
      const line = before.split('\n').length;
      throw new ConfigSyntaxError(file, { line, column: before.length - before.lastIndexOf('\n') }, message);
    }
    throw new ConfigSyntaxError(file, { line: 1, column: 1 }, message);
  }
  const warnings: string[] = [];
  const config = decode(JSON_SOURCE(file), { v: parsed, path: '' }, MODEL_CONFIG, '', `${file}:1:1`, warnings);
  return { config: config as TritonModelConfig, warnings };
}
