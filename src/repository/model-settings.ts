import type { TensorSignature } from '../core/servable';
import type { OnnxHostOptions } from '../onnx';
import type { RepositoryVersionInfo } from '../serving';
import { DECODER_PARAMETERS, decoderSettings, type DecoderSettings } from './decoder-host';
import { ConfigValueError, type TritonModelConfig, type TritonQueuePolicy, type TritonTensorConfig } from './config-schema';

/**
 * The host options a repository model gets where its config says nothing, and the settings the
 * repository's own defaults cover (`microbatch serve` passes its flags here).
 */
export type RepositoryHostDefaults = Pick<OnnxHostOptions, 'maxBatchSize' | 'maxDelayMs' | 'maxQueueSize' | 'timeoutMs' | 'workers' | 'threads' | 'machine' | 'observer'>;

/** Which versions of a model are served (Triton's `version_policy`). */
export type VersionPolicy = { readonly latest: number } | { readonly all: true } | { readonly specific: readonly number[] };

/** What a model's config comes to: its host options, the versions to serve, the model file's name. */
export interface ModelSettings {
  /** Options for `createOnnxHost` (with `workers`): the config's values over the defaults. */
  readonly host: OnnxHostOptions & { workers: number };
  readonly versionPolicy: VersionPolicy;
  /** The file in each version folder: `default_model_filename`, else `model.onnx`. */
  readonly modelFile: string;
  /** What was given but not taken (a GPU instance group, `timeout_action: DELAY`...). */
  readonly warnings: readonly string[];
  /** Set for a decoder (its `parameters` name `token` and `logits`): served as a generator. */
  readonly decoder?: DecoderSettings;
}

/** The platform and backend names of the models microbatch serves: ONNX on onnxruntime. */
export const ONNX_PLATFORM = 'onnxruntime_onnx';
export const ONNX_BACKEND = 'onnxruntime';

/**
 * microbatch's own settings in the config's `parameters` map (Triton has none of these): each key
 * is the `createOnnxHost` option of the same name, each value a string as Triton's parameters are.
 */
export const MICROBATCH_PARAMETERS = ['policy', 'maxLatencyMs', 'cache', 'splitOversize', 'warmup', 'threads', 'machine', 'batchTimeoutMs'] as const;

const usMs = (us: number): number => us / 1000;

/** A parameter's string as the option's value, or a {@link ConfigValueError} naming both. */
function parameter(file: string, key: (typeof MICROBATCH_PARAMETERS)[number], text: string): unknown {
  const where = `${file}: parameters[${JSON.stringify(key)}]`;
  const bool = (): boolean => {
    if (text === 'true' || text === 'false') return text === 'true';
    throw new ConfigValueError(where, `expected "true" or "false", got ${JSON.stringify(text)}`);
  };
  const number = (min: number, integer = false): number => {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new ConfigValueError(where, `expected ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(text)}`);
    return n;
  };
  switch (key) {
    case 'policy':
    case 'machine': {
      const allowed = key === 'policy' ? ['greedy', 'adaptive'] : ['shared', 'dedicated'];
      if (!allowed.includes(text)) throw new ConfigValueError(where, `expected one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}, got ${JSON.stringify(text)}`);
      return text;
    }
    case 'maxLatencyMs':
    case 'batchTimeoutMs':
      return number(0);
    case 'threads':
      return number(1, true);
    case 'splitOversize':
    case 'warmup':
      return bool();
    case 'cache': {
      if (text === 'true' || text === 'false') return text === 'true';
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
      } catch {
        // falls through to the error below
      }
      throw new ConfigValueError(where, `expected "true", "false" or a JSON object such as {"maxEntries": 1000, "ttlMs": 60000}, got ${JSON.stringify(text)}`);
    }
  }
}

/** A queue policy's limits as host options. */
function queueOptions(policy: TritonQueuePolicy | undefined, where: string, warnings: string[]): { maxQueueSize?: number; timeoutMs?: number } {
  if (policy === undefined) return {};
  if (policy.timeout_action === 'DELAY') warnings.push(`${where}: timeout_action DELAY is not supported; a request past its timeout is rejected (REJECT)`);
  return {
    ...(policy.max_queue_size !== undefined ? { maxQueueSize: policy.max_queue_size === 0 ? Infinity : policy.max_queue_size } : {}),
    ...(policy.default_timeout_microseconds !== undefined && policy.default_timeout_microseconds > 0 ? { timeoutMs: usMs(policy.default_timeout_microseconds) } : {}),
  };
}

/**
 * What a model's config means for microbatch: `createOnnxHost` options (the config's values over
 * `defaults`), its version policy and model file name. Throws a {@link ConfigValueError} naming
 * `file` for a value microbatch cannot serve (another platform, a name that is not the folder's).
 *
 * | config | host option |
 * | --- | --- |
 * | `max_batch_size` | `maxBatchSize` (0: 1, every request runs alone) |
 * | `dynamic_batching.max_queue_delay_microseconds` | `maxDelayMs` (÷ 1000) |
 * | `dynamic_batching.preferred_batch_size` | `preferredBatchSizes` |
 * | `default_queue_policy.max_queue_size` | `maxQueueSize` (0: unbounded) |
 * | `default_queue_policy.default_timeout_microseconds` | `timeoutMs` (÷ 1000; 0: none) |
 * | `priority_levels`, `default_priority_level`, `priority_queue_policy` | `priorities`: level k runs as priority `default_priority_level − k` |
 * | `instance_group[].count` (summed) | `workers` |
 * | `model_warmup` | `warmup: true` |
 * | `response_cache.enable` | `cache: true` |
 * | `parameters` (see {@link MICROBATCH_PARAMETERS}) | the option of the same name |
 *
 * @example
 * ```ts
 * const settings = modelSettings({ max_batch_size: 8 }, 'm/config.pbtxt', 'm', { maxBatchSize: 32 });
 * settings.host.maxBatchSize; // 8
 * ```
 */
export function modelSettings(config: TritonModelConfig, file: string, name: string, defaults: RepositoryHostDefaults): ModelSettings {
  const warnings: string[] = [];
  if (config.name !== undefined && config.name !== name) throw new ConfigValueError(file, `name ${JSON.stringify(config.name)} differs from the model's folder ${JSON.stringify(name)}; they must be equal`);
  const { platform, backend } = config;
  if ((platform !== undefined && platform !== ONNX_PLATFORM) || (backend !== undefined && backend !== ONNX_BACKEND)) {
    const given = [platform !== undefined ? `platform ${JSON.stringify(platform)}` : '', backend !== undefined ? `backend ${JSON.stringify(backend)}` : ''].filter((x) => x !== '').join(' and ');
    throw new ConfigValueError(file, `microbatch serves ONNX models (platform "${ONNX_PLATFORM}" or backend "${ONNX_BACKEND}"), got ${given}`);
  }
  const mbs = config.max_batch_size;
  if (mbs !== undefined && mbs < 0) throw new ConfigValueError(file, `max_batch_size must be >= 0, got ${mbs}`);
  const maxBatchSize = mbs === undefined ? defaults.maxBatchSize : Math.max(1, mbs);
  const host: OnnxHostOptions & { workers: number } = { ...defaults, maxBatchSize, name, workers: defaults.workers ?? 1 };

  const db = config.dynamic_batching;
  if (db !== undefined) {
    const at = `${file}: dynamic_batching`;
    if (db.max_queue_delay_microseconds !== undefined) host.maxDelayMs = usMs(db.max_queue_delay_microseconds);
    const preferred = db.preferred_batch_size ?? [];
    const bad = preferred.find((p) => p <= 0 || p > maxBatchSize);
    if (bad !== undefined) throw new ConfigValueError(at, `preferred_batch_size ${bad} must be from 1 to max_batch_size (${maxBatchSize})`);
    if (preferred.length > 0) host.preferredBatchSizes = [...new Set(preferred)].sort((a, b) => a - b);
    Object.assign(host, queueOptions(db.default_queue_policy, `${at}.default_queue_policy`, warnings));
    const levels = db.priority_levels ?? 0;
    const policies = Object.entries(db.priority_queue_policy ?? {});
    if (levels === 0 && (policies.length > 0 || db.default_priority_level !== undefined)) throw new ConfigValueError(at, 'priority_queue_policy and default_priority_level need priority_levels > 0');
    if (levels > 0) {
      const standard = db.default_priority_level ?? 0;
      if (standard < 1 || standard > levels) throw new ConfigValueError(at, `default_priority_level must be from 1 to priority_levels (${levels}), got ${standard}`);
      const priorities: Record<number, { timeoutMs?: number }> = {};
      for (const [key, policy] of policies) {
        const level = Number(key);
        if (level < 1 || level > levels) throw new ConfigValueError(at, `priority_queue_policy key ${key} must be from 1 to priority_levels (${levels})`);
        const q = queueOptions(policy, `${at}.priority_queue_policy[${key}]`, warnings);
        if (q.maxQueueSize !== undefined) warnings.push(`${at}.priority_queue_policy[${key}]: max_queue_size per level is not supported; the default queue policy's bounds the whole queue`);
        // Triton's level 1 is the highest; microbatch runs larger numbers first, and a request
        // naming no priority runs at 0, which is the default level here.
        priorities[standard - level] = q.timeoutMs === undefined ? {} : { timeoutMs: q.timeoutMs };
      }
      if (policies.length > 0) host.priorities = priorities;
    }
  }

  const groups = config.instance_group ?? [];
  if (groups.length > 0) {
    for (const g of groups) {
      if (g.kind === 'KIND_GPU' || g.kind === 'KIND_MODEL') warnings.push(`${file}: instance_group kind ${g.kind} runs on CPU worker threads here; name GPU execution providers in the session options instead`);
      if (g.count !== undefined && g.count < 1) throw new ConfigValueError(file, `instance_group count must be >= 1, got ${g.count}`);
    }
    host.workers = groups.reduce((sum, g) => sum + (g.count ?? 1), 0);
  }

  if ((config.model_warmup ?? []).length > 0) {
    host.warmup = true;
    if (config.model_warmup?.some((w) => Object.values(w.inputs ?? {}).some((i) => i.input_data_file !== undefined))) warnings.push(`${file}: model_warmup input_data_file is not read; warm-up runs zero-filled inputs`);
  }
  if (config.response_cache?.enable === true) host.cache = true;

  for (const [key, value] of Object.entries(config.parameters ?? {})) {
    if ((DECODER_PARAMETERS as readonly string[]).includes(key)) continue;
    if (!(MICROBATCH_PARAMETERS as readonly string[]).includes(key)) {
      warnings.push(`${file}: parameters[${JSON.stringify(key)}] is not a microbatch setting (${[...MICROBATCH_PARAMETERS, ...DECODER_PARAMETERS].join(', ')}); ignored`);
      continue;
    }
    const option = parameter(file, key as (typeof MICROBATCH_PARAMETERS)[number], value.string_value ?? '');
    if (key === 'warmup') {
      if (option === true) host.warmup = true;
      else delete host.warmup;
    } else (host as unknown as Record<string, unknown>)[key] = option;
  }

  const vp = config.version_policy;
  const versionPolicy: VersionPolicy =
    vp?.all !== undefined ? { all: true } : vp?.specific !== undefined ? { specific: vp.specific.versions ?? [] } : { latest: vp?.latest?.num_versions ?? 1 };
  if ('latest' in versionPolicy && versionPolicy.latest < 1) throw new ConfigValueError(file, `version_policy latest num_versions must be >= 1, got ${versionPolicy.latest}`);
  const decoder = decoderSettings(config.parameters ?? {}, file);
  return { host, versionPolicy, modelFile: config.default_model_filename ?? 'model.onnx', warnings, ...(decoder === undefined ? {} : { decoder }) };
}

/**
 * The parts of a model's configuration in force that its host's live options do not show, for
 * `GET .../config`: the version policy, the worker threads as CPU instances, the priority levels,
 * preferred sizes, and microbatch's own settings as `parameters`.
 */
export function configInForce(config: TritonModelConfig, settings: ModelSettings): RepositoryVersionInfo['config'] {
  const p = settings.versionPolicy;
  const h = settings.host;
  const db = config.dynamic_batching;
  const parameters: Record<string, { string_value: string }> = {};
  for (const key of MICROBATCH_PARAMETERS) {
    const value = (h as unknown as Record<string, unknown>)[key];
    if (value !== undefined && key !== 'threads' && key !== 'machine') parameters[key] = { string_value: typeof value === 'object' ? JSON.stringify(value) : String(value) };
  }
  return {
    version_policy: 'latest' in p ? { latest: { num_versions: p.latest } } : 'all' in p ? { all: {} } : { specific: { versions: p.specific } },
    instance_group: [{ count: Math.max(1, h.workers), kind: 'KIND_CPU' }],
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
    dynamic_batching: {
      ...(h.preferredBatchSizes === undefined ? {} : { preferred_batch_size: h.preferredBatchSizes }),
      ...(db?.priority_levels === undefined || db.priority_levels === 0 ? {} : { priority_levels: db.priority_levels, default_priority_level: db.default_priority_level as number }),
      ...(db?.priority_queue_policy === undefined
        ? {}
        : {
            priority_queue_policy: Object.fromEntries(
              Object.entries(db.priority_queue_policy).map(([k, q]) => [k, q.default_timeout_microseconds === undefined ? {} : { default_timeout_microseconds: q.default_timeout_microseconds }]),
            ),
          }),
    },
  };
}

/** Triton's type name of a tensor's dtype (`float32` → `TYPE_FP32`). */
const TRITON_TYPES: Readonly<Record<string, string>> = {
  bool: 'TYPE_BOOL', uint8: 'TYPE_UINT8', uint16: 'TYPE_UINT16', uint32: 'TYPE_UINT32', uint64: 'TYPE_UINT64', int8: 'TYPE_INT8', int16: 'TYPE_INT16',
  int32: 'TYPE_INT32', int64: 'TYPE_INT64', float16: 'TYPE_FP16', float32: 'TYPE_FP32', float64: 'TYPE_FP64', string: 'TYPE_STRING', bfloat16: 'TYPE_BF16',
};

/** A model's tensor as a config writes it: `name TYPE_X [dims]`, dims without the batch axis when the model batches. */
function shownTensor(t: TensorSignature, batched: boolean): string {
  const dims = t.dims.map((d) => (typeof d === 'number' ? d : -1)).filter((_, i) => !(batched && i === t.batchAxis));
  return `${t.name} ${TRITON_TYPES[t.dtype] ?? t.dtype} [${dims.join(', ')}]`;
}

function shownConfig(t: TritonTensorConfig): string {
  return `${t.name ?? '(no name)'} ${t.data_type ?? '(any type)'} [${(t.dims ?? []).join(', ')}]`;
}

/**
 * Checks the config's `input` and `output` against the model's own signature: each named tensor
 * must exist with the same type and dims (without the batch axis when `max_batch_size` > 0; `-1`
 * matches any size). Returns the mismatch, naming both signatures, or `undefined` when they agree
 * (or the config lists none).
 *
 * @example
 * ```ts
 * const misfit = signatureMisfit({ input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [3] }] }, host.model);
 * ```
 */
export function signatureMisfit(config: TritonModelConfig, model: { readonly inputs: readonly TensorSignature[]; readonly outputs: readonly TensorSignature[] }): string | undefined {
  const batched = (config.max_batch_size ?? 1) > 0;
  const problems: string[] = [];
  for (const [kind, given, actual] of [['input', config.input ?? [], model.inputs], ['output', config.output ?? [], model.outputs]] as const) {
    for (const t of given) {
      const m = actual.find((a) => a.name === t.name);
      if (m === undefined) {
        problems.push(`${kind} ${JSON.stringify(t.name ?? '')} is not in the model`);
        continue;
      }
      if (t.data_type !== undefined && TRITON_TYPES[m.dtype] !== t.data_type) problems.push(`${kind} ${JSON.stringify(t.name)} is ${TRITON_TYPES[m.dtype] ?? m.dtype} in the model, ${t.data_type} in the config`);
      const dims = m.dims.filter((_, i) => !(batched && m.batchAxis !== 'shared' && i === m.batchAxis));
      const want = t.reshape?.shape ?? t.dims;
      if (want !== undefined && t.reshape === undefined && (want.length !== dims.length || want.some((d, i) => d !== -1 && typeof dims[i] === 'number' && dims[i] !== d))) {
        problems.push(`${kind} ${JSON.stringify(t.name)} has dims [${dims.map((d) => (typeof d === 'number' ? d : -1)).join(', ')}] in the model, [${want.join(', ')}] in the config`);
      }
    }
  }
  if (problems.length === 0) return undefined;
  const sig = (list: readonly TensorSignature[]): string => list.map((t) => shownTensor(t, batched && t.batchAxis !== 'shared')).join(', ');
  const conf = (list: readonly TritonTensorConfig[] | undefined): string => (list ?? []).map(shownConfig).join(', ') || '(none)';
  return `${problems.join('; ')}. The model: inputs ${sig(model.inputs)}; outputs ${sig(model.outputs)}. The config: inputs ${conf(config.input)}; outputs ${conf(config.output)}`;
}
