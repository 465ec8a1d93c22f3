import { ConfigSyntaxError, ConfigValueError, parseTextFormat, readJsonConfig, readTextConfig } from '../../src/repository';

// config.pbtxt is protobuf text format; Triton's own example configs use every form below.
const FULL = `
# a comment, and one after a field
name: "cls"   # the folder's name
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "x", data_type: TYPE_FP32, dims: [ 3, 48, 192 ] }
]
output { name: 'y' data_type: TYPE_FP32 dims: 2 }
output < name: "z"; data_type: 11, dims: [ -1 ] >
dynamic_batching {
  max_queue_delay_microseconds: 0x1F4
  preferred_batch_size: [ 2, 4 ]
  preferred_batch_size: 8
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { max_queue_size: 16, default_timeout_microseconds: 1000000, timeout_action: REJECT }
  priority_queue_policy { key: 1 value: { default_timeout_microseconds: 2000 } }
}
instance_group [ { count: 2, kind: KIND_CPU } ]
version_policy: { latest { num_versions: 2 } }
parameters { key: "policy" value: { string_value: "adaptive" } }
parameters: { key: "maxLatencyMs", value { string_value: "5" "0" } }
`;

test('a config in every form Triton uses reads into its JSON shape', () => {
  const { config, warnings } = readTextConfig(FULL, 'm/config.pbtxt');
  expect(warnings).toEqual([]);
  expect(config).toEqual({
    name: 'cls',
    platform: 'onnxruntime_onnx',
    max_batch_size: 8,
    input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [3, 48, 192] }],
    output: [
      { name: 'y', data_type: 'TYPE_FP32', dims: [2] },
      { name: 'z', data_type: 'TYPE_FP32', dims: [-1] },
    ],
    dynamic_batching: {
      max_queue_delay_microseconds: 500,
      preferred_batch_size: [2, 4, 8],
      priority_levels: 2,
      default_priority_level: 2,
      default_queue_policy: { max_queue_size: 16, default_timeout_microseconds: 1_000_000, timeout_action: 'REJECT' },
      priority_queue_policy: { '1': { default_timeout_microseconds: 2000 } },
    },
    instance_group: [{ count: 2, kind: 'KIND_CPU' }],
    version_policy: { latest: { num_versions: 2 } },
    parameters: { policy: { string_value: 'adaptive' }, maxLatencyMs: { string_value: '50' } },
  });
});

test('the JSON form reads into the same config: proto or camelCase names, 64-bit integers as strings, enum names in any case', () => {
  const json = JSON.stringify({
    name: 'cls',
    maxBatchSize: 8,
    input: [{ name: 'x', data_type: 'type_fp32', dims: ['3', 48, 192] }],
    dynamic_batching: { maxQueueDelayMicroseconds: '500', preferred_batch_size: [2] },
    version_policy: { all: {} },
    parameters: { cache: { string_value: 'true' } },
  });
  expect(readJsonConfig(json, 'config.json')).toEqual({
    config: {
      name: 'cls',
      max_batch_size: 8,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [3, 48, 192] }],
      dynamic_batching: { max_queue_delay_microseconds: 500, preferred_batch_size: [2] },
      version_policy: { all: {} },
      parameters: { cache: { string_value: 'true' } },
    },
    warnings: [],
  });
});

test('strings: both quotes, escapes (C, octal, hex, unicode), adjacent strings joined', () => {
  const [f] = parseTextFormat(String.raw`name: "a\n\t\"b\"" 'c\'d' "\101\x42\u00e9\U0001F600"`, 'c.pbtxt');
  expect(f!.value).toMatchObject({ kind: 'string', value: 'a\n\t"b"c\'dABé😀' });
});

test('numbers: signs, floats, exponents, inf and nan', () => {
  const values = parseTextFormat('a: -3 b: 1.5e3 c: .5 d: -inf e: nan f: 2.0f g: 017', 'c.pbtxt').map((f) => (f.value as { value: number }).value);
  expect(values).toEqual([-3, 1500, 0.5, -Infinity, NaN, 2, 15]);
});

test('an unknown field and a Triton field microbatch does not use are warned, with file:line:column, and the rest reads', () => {
  const { config, warnings } = readTextConfig('max_batch_size: 4\nfrobnicate: 3\noptimization { execution_accelerators { } }\ndynamic_batching { colour: "red" }', 'm/config.pbtxt');
  expect(config).toEqual({ max_batch_size: 4, dynamic_batching: {} });
  expect(warnings).toEqual([
    'm/config.pbtxt:2:1: unknown field "frobnicate"; ignored',
    'm/config.pbtxt:3:1: field "optimization" is not used by microbatch; ignored',
    'm/config.pbtxt:4:20: unknown field "dynamic_batching.colour"; ignored',
  ]);
});

describe('malformed text is refused with file:line:column and what was expected', () => {
  const cases: Array<[string, string, string]> = [
    ['an unterminated string', 'name: "abc\nmax_batch_size: 1', 'c.pbtxt:1:11: unterminated string: expected a closing " before the end of the line'],
    ['an unclosed message', 'dynamic_batching {\n  max_queue_delay_microseconds: 5\n', 'c.pbtxt:3:1: expected a field name or "}" to close the message opened at line 1, column 18, got the end of the file'],
    ['a stray closing brace', 'max_batch_size: 1 }', 'c.pbtxt:1:19: expected a field name, got "}"'],
    ['a scalar without a colon', 'max_batch_size 8', 'c.pbtxt:1:16: expected ":" or "{" after field "max_batch_size", got "8"'],
    ['a missing value', 'max_batch_size: }', 'c.pbtxt:1:17: expected a value for field "max_batch_size" (a number, a string, a name or a message in { }), got "}"'],
    ['a list without commas', 'dims: [1 2]', 'c.pbtxt:1:10: expected "," or "]" to close the list opened at line 1, got "2"'],
    ['an unclosed list', 'dims: [1, 2', 'c.pbtxt:1:12: expected "," or "]" to close the list opened at line 1, got the end of the file'],
    ['an unknown escape', 'name: "a\\qb"', 'c.pbtxt:1:9: unknown escape "\\\\q" in a string'],
    ['a bad \\x escape', 'name: "\\xZZ"', 'c.pbtxt:1:8: expected hex digits after \\x'],
    ['a bad \\u escape', 'name: "\\u12"', 'c.pbtxt:1:8: expected 4 hex digits of a code point after \\u'],
    ['a malformed number', 'max_batch_size: 12ab', 'c.pbtxt:1:17: malformed number "12a"'],
    ['a character no token starts with', 'max_batch_size: 1\n  @', 'c.pbtxt:2:3: unexpected character "@"'],
    ['a sign before a name', 'kind: -KIND_CPU', 'c.pbtxt:1:8: expected a number after "-", got "KIND_CPU"'],
    ['a mismatched closer', 'a < b: 1 }', 'c.pbtxt:1:10: expected a field name or ">" to close the message opened at line 1, column 3, got "}"'],
  ];
  test.each(cases)('%s', (_what, text, message) => {
    let error: unknown;
    try {
      parseTextFormat(text, 'c.pbtxt');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigSyntaxError);
    expect((error as Error).message).toBe(message);
    const [, line, column] = /^c\.pbtxt:(\d+):(\d+):/.exec(message)!;
    expect(error).toMatchObject({ file: 'c.pbtxt', line: Number(line), column: Number(column) });
  });
});

describe('values that do not fit the config are refused with file:line:column', () => {
  const cases: Array<[string, string, string]> = [
    ['a string for a number', 'max_batch_size: "8"', 'c.pbtxt:1:1: expected "max_batch_size" to be an integer from -2147483648 to 2147483647 (int32), got "8"'],
    ['a fraction for an integer', 'max_batch_size: 1.5', 'c.pbtxt:1:1: expected "max_batch_size" to be an integer from -2147483648 to 2147483647 (int32), got 1.5'],
    ['a negative unsigned', 'dynamic_batching { max_queue_delay_microseconds: -1 }', 'c.pbtxt:1:20: expected "dynamic_batching.max_queue_delay_microseconds" to be an integer from 0 to 9007199254740991 (uint64), got -1'],
    ['an unknown enum name', 'input { data_type: TYPE_FLOAT }', 'c.pbtxt:1:9: expected "input.data_type" to be one of TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16, got TYPE_FLOAT'],
    ['a name for a string', 'name: cls', 'c.pbtxt:1:1: expected "name" to be a string in quotes, got cls'],
    ['a bad bool', 'response_cache { enable: yes }', 'c.pbtxt:1:18: expected "response_cache.enable" to be true or false, got yes'],
    ['a scalar for a message', 'dynamic_batching: 5', 'c.pbtxt:1:1: expected a message for "dynamic_batching", got 5'],
    ['a single field given twice', 'max_batch_size: 1\nmax_batch_size: 2', 'c.pbtxt:2:1: "max_batch_size" is not a repeated field: give it one value'],
    ['a list for a single field', 'max_batch_size: [1]', 'c.pbtxt:1:1: "max_batch_size" is not a repeated field: give it one value'],
    ['two members of a oneof', 'version_policy { all { } latest { } }', 'c.pbtxt:1:26: "version_policy.latest" and "all" are both set, but only one of policy_choice may be'],
    ['a map entry without a key', 'parameters { value { string_value: "x" } }', 'c.pbtxt:1:12: a map entry needs exactly one "key" and at most one "value" (c.pbtxt:1:1)'],
    ['a map entry with another field', 'parameters { key: "a" other: 1 }', 'c.pbtxt:1:23: a map entry has only "key" and "value", got "other"'],
  ];
  test.each(cases)('%s', (_what, text, message) => {
    expect(() => readTextConfig(text, 'c.pbtxt')).toThrow(ConfigValueError);
    expect(() => readTextConfig(text, 'c.pbtxt')).toThrow(message);
  });
});

test('malformed JSON is refused with file:line:column; a wrong value with file and field', () => {
  let error: unknown;
  try {
    readJsonConfig('{\n  "max_batch_size": 8,\n  oops\n}', 'm/config.json');
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(ConfigSyntaxError);
  expect(error).toMatchObject({ file: 'm/config.json', line: 3, column: 3 });
  expect((error as Error).message).toMatch(/^m\/config\.json:3:3: /);
  expect(() => readJsonConfig('{"dynamic_batching": {"preferred_batch_size": "four"}}', 'm/config.json')).toThrow(
    'm/config.json: at dynamic_batching.preferred_batch_size: expected "dynamic_batching.preferred_batch_size" to be an integer from -2147483648 to 2147483647 (int32), got "four"',
  );
  expect(() => readJsonConfig('[1]', 'm/config.json')).toThrow('m/config.json:1:1: expected a message for the config, got [1]');
});
