import { ConfigValueError, modelSettings, readTextConfig, selectVersions, signatureMisfit } from '../../src/repository';

const defaults = { maxBatchSize: 32, maxQueueSize: 1024, timeoutMs: 30_000, workers: 1 };
const settings = (text: string) => modelSettings(readTextConfig(text, 'm/config.pbtxt').config, 'm/config.pbtxt', 'm', defaults);

test('no config: the defaults, the latest version, model.onnx', () => {
  expect(modelSettings({}, 'm/config.pbtxt', 'm', defaults)).toEqual({
    host: { ...defaults, name: 'm' },
    versionPolicy: { latest: 1 },
    modelFile: 'model.onnx',
    warnings: [],
  });
});

test('each batching field maps to its host option, with units converted', () => {
  const s = settings(`
    max_batch_size: 8
    default_model_filename: "cls.onnx"
    dynamic_batching {
      max_queue_delay_microseconds: 2500
      preferred_batch_size: [ 8, 4, 4 ]
      default_queue_policy { max_queue_size: 3, default_timeout_microseconds: 1500000 }
      priority_levels: 3
      default_priority_level: 2
      priority_queue_policy { key: 1 value { default_timeout_microseconds: 100000 } }
      priority_queue_policy { key: 3 value { default_timeout_microseconds: 9000000 } }
    }
    instance_group [ { count: 2, kind: KIND_CPU }, { kind: KIND_AUTO } ]
    model_warmup [ { name: "zeros", batch_size: 1, inputs { key: "x" value { data_type: TYPE_FP32, dims: [2], zero_data: true } } } ]
    response_cache { enable: true }
    parameters { key: "policy" value { string_value: "adaptive" } }
    parameters { key: "maxLatencyMs" value { string_value: "40" } }
    parameters { key: "splitOversize" value { string_value: "true" } }
    version_policy { specific { versions: [1, 3] } }
  `);
  expect(s.host).toEqual({
    ...defaults,
    name: 'm',
    maxBatchSize: 8,
    maxDelayMs: 2.5,
    preferredBatchSizes: [4, 8],
    maxQueueSize: 3,
    timeoutMs: 1500,
    // level 1 (Triton's highest) runs first: larger numbers run first here, and the default level is 0
    priorities: { 1: { timeoutMs: 100 }, [-1]: { timeoutMs: 9000 } },
    workers: 3,
    warmup: true,
    cache: true,
    policy: 'adaptive',
    maxLatencyMs: 40,
    splitOversize: true,
  });
  expect(s.versionPolicy).toEqual({ specific: [1, 3] });
  expect(s.modelFile).toBe('cls.onnx');
  expect(s.warnings).toEqual([]);
});

test('max_batch_size 0 runs each request alone; an unbounded queue is 0 in Triton and Infinity here', () => {
  const s = settings('max_batch_size: 0 dynamic_batching { default_queue_policy { max_queue_size: 0 } }');
  expect(s.host).toMatchObject({ maxBatchSize: 1, maxQueueSize: Infinity });
});

test('what is given but not taken is warned: DELAY, GPU instances, warm-up files, parameters microbatch does not know', () => {
  const s = settings(`
    dynamic_batching { default_queue_policy { timeout_action: DELAY } }
    instance_group { kind: KIND_GPU count: 1 }
    model_warmup { inputs { key: "x" value { input_data_file: "x.bin" } } }
    parameters { key: "execution_mode" value { string_value: "parallel" } }
  `);
  expect(s.warnings).toEqual([
    'm/config.pbtxt: dynamic_batching.default_queue_policy: timeout_action DELAY is not supported; a request past its timeout is rejected (REJECT)',
    'm/config.pbtxt: instance_group kind KIND_GPU runs on CPU worker threads here; name GPU execution providers in the session options instead',
    'm/config.pbtxt: model_warmup input_data_file is not read; warm-up runs zero-filled inputs',
    'm/config.pbtxt: parameters["execution_mode"] is not a microbatch setting (policy, maxLatencyMs, cache, splitOversize, warmup, threads, machine, batchTimeoutMs, decoder.token, decoder.logits, decoder.state, decoder.cache, decoder.maskKey, stopTokens, maxTokens); ignored',
  ]);
  expect(s.host.workers).toBe(1);
});

describe('a config microbatch cannot serve is refused, naming the file and the field', () => {
  const cases: Array<[string, string, string]> = [
    ['another platform', 'platform: "tensorrt_plan"', 'm/config.pbtxt: microbatch serves ONNX models (platform "onnxruntime_onnx" or backend "onnxruntime"), got platform "tensorrt_plan"'],
    ['another backend', 'backend: "python"', 'got backend "python"'],
    ['a name other than the folder', 'name: "other"', 'm/config.pbtxt: name "other" differs from the model\'s folder "m"; they must be equal'],
    ['a negative max_batch_size', 'max_batch_size: -1', 'max_batch_size must be >= 0, got -1'],
    ['a preferred size past the max', 'max_batch_size: 4 dynamic_batching { preferred_batch_size: 8 }', 'm/config.pbtxt: dynamic_batching: preferred_batch_size 8 must be from 1 to max_batch_size (4)'],
    ['levels without priority_levels', 'dynamic_batching { default_priority_level: 1 }', 'priority_queue_policy and default_priority_level need priority_levels > 0'],
    ['a default level out of range', 'dynamic_batching { priority_levels: 2 default_priority_level: 3 }', 'default_priority_level must be from 1 to priority_levels (2), got 3'],
    ['a missing default level', 'dynamic_batching { priority_levels: 2 }', 'default_priority_level must be from 1 to priority_levels (2), got 0'],
    ['a policy key out of range', 'dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 5 value { } } }', 'priority_queue_policy key 5 must be from 1 to priority_levels (2)'],
    ['an instance count of 0', 'instance_group { count: 0 }', 'instance_group count must be >= 1, got 0'],
    ['latest 0', 'version_policy { latest { num_versions: 0 } }', 'version_policy latest num_versions must be >= 1, got 0'],
    ['a bad policy parameter', 'parameters { key: "policy" value { string_value: "fast" } }', 'm/config.pbtxt: parameters["policy"]: expected one of "greedy", "adaptive", got "fast"'],
    ['a bad number parameter', 'parameters { key: "maxLatencyMs" value { string_value: "soon" } }', 'parameters["maxLatencyMs"]: expected a number >= 0, got "soon"'],
    ['a bad bool parameter', 'parameters { key: "splitOversize" value { string_value: "yes" } }', 'parameters["splitOversize"]: expected "true" or "false", got "yes"'],
    ['a bad cache parameter', 'parameters { key: "cache" value { string_value: "[1]" } }', 'parameters["cache"]: expected "true", "false" or a JSON object'],
  ];
  test.each(cases)('%s', (_what, text, message) => {
    expect(() => settings(text)).toThrow(ConfigValueError);
    expect(() => settings(text)).toThrow(message);
  });
});

test('cache and warmup parameters: a JSON cache object, warmup false turns model_warmup off', () => {
  const s = settings('model_warmup { } parameters { key: "warmup" value { string_value: "false" } } parameters { key: "cache" value { string_value: "{\\"maxEntries\\": 5}" } }');
  expect(s.host.warmup).toBeUndefined();
  expect(s.host.cache).toEqual({ maxEntries: 5 });
});

test('version policies: latest N takes the highest N, all takes every one, specific those that exist', () => {
  expect(selectVersions([3, 1, 10, 2], { latest: 1 })).toEqual({ served: [10], missing: [] });
  expect(selectVersions([3, 1, 10, 2], { latest: 2 })).toEqual({ served: [3, 10], missing: [] });
  expect(selectVersions([1, 2], { latest: 5 })).toEqual({ served: [1, 2], missing: [] });
  expect(selectVersions([2, 1], { all: true })).toEqual({ served: [1, 2], missing: [] });
  expect(selectVersions([1, 2, 3], { specific: [3, 1, 7] })).toEqual({ served: [1, 3], missing: [7] });
});

test("the config's inputs and outputs are checked against the model's, and a mismatch names both signatures", () => {
  const model = {
    inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 4] as Array<string | number>, batchAxis: 0 as const }],
    outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 3] as Array<string | number>, batchAxis: 0 as const }],
  };
  expect(signatureMisfit({ max_batch_size: 8, input: [{ name: 'X', data_type: 'TYPE_FP32', dims: [4] }], output: [{ name: 'Y', dims: [-1] }] }, model)).toBeUndefined();
  expect(signatureMisfit({}, model)).toBeUndefined();
  expect(signatureMisfit({ max_batch_size: 8, input: [{ name: 'X', data_type: 'TYPE_INT64', dims: [5] }, { name: 'Z', dims: [1] }] }, model)).toBe(
    'input "X" is TYPE_FP32 in the model, TYPE_INT64 in the config; input "X" has dims [4] in the model, [5] in the config; input "Z" is not in the model. ' +
      'The model: inputs X TYPE_FP32 [4]; outputs Y TYPE_FP32 [3]. The config: inputs X TYPE_INT64 [5], Z (any type) [1]; outputs (none)',
  );
  // max_batch_size 0: dims are the whole shape
  expect(signatureMisfit({ max_batch_size: 0, input: [{ name: 'X', dims: [4] }] }, model)).toMatch(/^input "X" has dims \[-1, 4\] in the model, \[4\] in the config/);
});
