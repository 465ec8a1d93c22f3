import type { Batcher } from './batcher';
import { systemClock } from './clock';
import type { ReleasePolicy } from './policy';
import { greedyPolicy } from './policy';
import { AdaptivePolicy } from './adaptive-policy';
import { CACHE_DEFAULTS, HOST_DEFAULTS } from './defaults';
import type { CacheOptions, HostOptions, PriorityLevelOptions, ResolvedOptions, TunableOptions, WarmupOptions } from './host-options';
import { checkMs, fail, optionKeys, positiveInteger, rejectUnknownKeys, stripUndefined } from './option-checks';

// The option types live in host-options.ts, the checks they are made of in option-checks.ts and
// the defaults in defaults.ts; this module validates host options and is where importers find all
// of them.
export type { CacheOptions, HostOptions, PriorityLevelOptions, RequestOptions, ResolvedOptions, TunableOptions, WarmupOptions } from './host-options';
export { checkMs, fail, optionKeys, positiveInteger, rejectUnknownKeys, stripUndefined } from './option-checks';

/** Every key `HostOptions` knows, for the unknown-key checks of every entry point. @internal */
export const HOST_OPTION_KEYS = optionKeys<HostOptions<unknown, unknown>>({
  maxBatchSize: true,
  maxDelayMs: true,
  maxConcurrentBatches: true,
  maxQueueSize: true,
  timeoutMs: true,
  maxLatencyMs: true,
  batchTimeoutMs: true,
  policy: true,
  batcher: true,
  isolateErrors: true,
  splitOversize: true,
  priorities: true,
  preferredBatchSizes: true,
  warmup: true,
  cache: true,
  name: true,
  observer: true,
  clock: true,
});

/** Checks the options `configure()` may change; returns them with defaults filled from `base`. @internal */
export function resolveTunable(where: string, options: Partial<TunableOptions>, base: TunableOptions): Required<TunableOptions> {
  const merged = { ...base, ...stripUndefined(options) } as Required<TunableOptions>;
  return {
    maxBatchSize: positiveInteger(where, 'maxBatchSize', merged.maxBatchSize, false),
    maxDelayMs: checkMs(where, 'maxDelayMs', merged.maxDelayMs, 'zero'),
    maxConcurrentBatches: positiveInteger(where, 'maxConcurrentBatches', merged.maxConcurrentBatches, false),
    maxQueueSize: positiveInteger(where, 'maxQueueSize', merged.maxQueueSize, true),
    timeoutMs: checkMs(where, 'timeoutMs', merged.timeoutMs, 'positive'),
    maxLatencyMs: checkMs(where, 'maxLatencyMs', merged.maxLatencyMs, 'positive'),
    batchTimeoutMs: checkMs(where, 'batchTimeoutMs', merged.batchTimeoutMs, 'positive'),
  };
}

/**
 * Options that {@link resolveOptions} made (so the host built from them does not check them again),
 * each with what the caller gave, which {@link deriveOptions} lays over an entry point's defaults.
 */
const resolved = new WeakMap<ResolvedOptions, Readonly<Record<string, unknown>>>();

/** True for options made by {@link resolveOptions} (or {@link deriveOptions}). @internal */
export function isResolved(options: unknown): options is ResolvedOptions {
  return typeof options === 'object' && options !== null && resolved.has(options as ResolvedOptions);
}

/**
 * Options from {@link resolveOptions} completed with what an entry point works out itself, checked
 * like a caller's: `defaults` (the worker count as `maxConcurrentBatches`, a name from the model
 * file, a batcher built from the model, generated warm-up samples) apply where the caller gave
 * none; `overrides` (`batchTimeoutMs: Infinity` where the worker pool keeps the batch timeout)
 * apply always. Precedence, lowest first: the table of defaults, `defaults`, what the caller gave,
 * `overrides`. The checks run again over the whole (once per host built, never per request), so
 * use the options this returns, not those passed in (an `'adaptive'` policy is made afresh).
 * @internal
 */
export function deriveOptions(
  where: string,
  options: ResolvedOptions,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any host's options: the entry point knows its types
  defaults: Partial<HostOptions<any, any, any, any>>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
  overrides: Partial<HostOptions<any, any, any, any>> = {},
): ResolvedOptions {
  const given = resolved.get(options);
  if (given === undefined) throw new TypeError(`${where}: deriveOptions takes the options that resolveOptions returned`);
  return resolveOptions(where, { ...stripUndefined(defaults), ...given, ...stripUndefined(overrides) });
}

/**
 * Validates host options and fills in defaults: called once per host, by the entry point that
 * received the options (the `ModelHost` constructor when called directly). @internal
 */
export function resolveOptions(where: string, options: unknown): ResolvedOptions {
  if (typeof options === 'number') options = { maxBatchSize: options };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    fail(where, 'options', 'an object with at least `maxBatchSize` (or a number: the maxBatchSize)', options);
  }
  const o = options as HostOptions<unknown, unknown>;
  rejectUnknownKeys(where, o, HOST_OPTION_KEYS);
  if (o.maxBatchSize === undefined) fail(where, 'maxBatchSize', 'an integer from 1 and up (it is required)', undefined);
  const tunable = resolveTunable(where, o, { ...HOST_DEFAULTS, maxBatchSize: o.maxBatchSize });

  const asked = o.policy === undefined ? HOST_DEFAULTS.policy : o.policy;
  let policy: ReleasePolicy = greedyPolicy;
  if (asked === 'adaptive') {
    policy = new AdaptivePolicy();
  } else if (asked !== 'greedy') {
    if (typeof asked !== 'object' || asked === null || typeof (asked as ReleasePolicy).decide !== 'function') {
      fail(where, 'policy', "'greedy', 'adaptive' or an object with a decide(view) method", o.policy);
    }
    policy = asked;
  }
  if (o.isolateErrors !== undefined && typeof o.isolateErrors !== 'boolean') fail(where, 'isolateErrors', 'a boolean', o.isolateErrors);
  if (o.splitOversize !== undefined && typeof o.splitOversize !== 'boolean') fail(where, 'splitOversize', 'a boolean', o.splitOversize);
  const priorities = o.priorities === undefined ? undefined : resolvePriorities(where, o.priorities);
  const preferredBatchSizes = o.preferredBatchSizes === undefined ? undefined : resolvePreferred(where, o.preferredBatchSizes, tunable.maxBatchSize);
  const warmup = o.warmup === undefined ? undefined : resolveWarmup(where, o.warmup, tunable.maxBatchSize);
  const cache = o.cache === undefined || o.cache === false ? undefined : resolveCache(where, o.cache);
  if (o.name !== undefined && (typeof o.name !== 'string' || o.name === '')) fail(where, 'name', 'a non-empty string', o.name);
  if (o.observer !== undefined && (typeof o.observer !== 'object' || o.observer === null)) {
    fail(where, 'observer', 'an object with optional onBatch/onRequest methods', o.observer);
  }
  const clock = o.clock ?? systemClock;
  if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function' || typeof clock.setTimer !== 'function' || typeof clock.clearTimer !== 'function') {
    fail(where, 'clock', 'an object with now(), setTimer() and clearTimer()', o.clock);
  }
  if (o.batcher !== undefined) {
    const b = o.batcher as Partial<Batcher<unknown, unknown>> | null;
    if (typeof b !== 'object' || b === null || typeof b.merge !== 'function' || typeof b.split !== 'function') {
      fail(where, 'batcher', 'an object with merge(items) and split(output, ctx) methods', o.batcher);
    }
  }
  const out: ResolvedOptions = {
    ...tunable,
    policy,
    batcher: o.batcher,
    isolateErrors: o.isolateErrors ?? HOST_DEFAULTS.isolateErrors,
    splitOversize: o.splitOversize ?? HOST_DEFAULTS.splitOversize,
    priorities,
    preferredBatchSizes,
    warmup,
    cache,
    name: o.name ?? HOST_DEFAULTS.name,
    observer: o.observer,
    clock,
  };
  resolved.set(out, stripUndefined(o) as Record<string, unknown>);
  return out;
}

const LEVEL_KEYS = optionKeys<PriorityLevelOptions>({ timeoutMs: true, maxDelayMs: true });

/** Checks `priorities`: keys are finite numbers, values `{ timeoutMs?, maxDelayMs? }`. @internal */
function resolvePriorities(where: string, value: unknown): Map<number, PriorityLevelOptions> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(where, 'priorities', 'an object keyed by priority level, e.g. { 1: { maxDelayMs: 0, timeoutMs: 200 } }', value);
  }
  const out = new Map<number, PriorityLevelOptions>();
  for (const [key, level] of Object.entries(value)) {
    const priority = Number(key);
    if (key.trim() === '' || !Number.isFinite(priority)) fail(where, 'priorities', 'keyed by priority levels (finite numbers)', key);
    const at = `priorities[${key}]`;
    if (typeof level !== 'object' || level === null || Array.isArray(level)) fail(where, at, 'an object { timeoutMs?, maxDelayMs? }', level);
    rejectUnknownKeys(`${where}: ${at}`, level, LEVEL_KEYS);
    const l = level as PriorityLevelOptions;
    out.set(priority, {
      ...(l.timeoutMs === undefined ? {} : { timeoutMs: checkMs(where, `${at}.timeoutMs`, l.timeoutMs, 'positive') }),
      ...(l.maxDelayMs === undefined ? {} : { maxDelayMs: checkMs(where, `${at}.maxDelayMs`, l.maxDelayMs, 'zero') }),
    });
  }
  return out;
}

/** Checks `preferredBatchSizes`: integers from 1 to `maxBatchSize`; returns them ascending, without repeats. @internal */
function resolvePreferred(where: string, value: unknown, maxBatchSize: number): number[] {
  if (!Array.isArray(value) || value.length === 0) fail(where, 'preferredBatchSizes', 'a non-empty array of batch sizes', value);
  for (const n of value) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > maxBatchSize) {
      fail(where, 'preferredBatchSizes', `batch sizes from 1 to maxBatchSize (${maxBatchSize})`, n, RangeError);
    }
  }
  return [...new Set(value as number[])].sort((a, b) => a - b);
}

const CACHE_KEYS = optionKeys<CacheOptions<unknown>>({ maxEntries: true, ttlMs: true, key: true });

/** Checks `cache`: `true` or `{ maxEntries?, ttlMs?, key? }`. @internal */
function resolveCache(where: string, value: unknown): NonNullable<ResolvedOptions['cache']> {
  if (value === true) return { ...CACHE_DEFAULTS, key: undefined };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'cache', 'true, or an object { maxEntries?, ttlMs?, key? }', value);
  rejectUnknownKeys(`${where}: cache`, value, CACHE_KEYS);
  const c = value as CacheOptions<unknown>;
  const maxEntries = c.maxEntries ?? CACHE_DEFAULTS.maxEntries;
  if (typeof maxEntries !== 'number' || !(Number.isInteger(maxEntries) || maxEntries === Infinity) || maxEntries < 0) {
    fail(where, 'cache.maxEntries', 'an integer >= 0 (or Infinity)', maxEntries, RangeError);
  }
  const ttlMs = c.ttlMs === undefined ? CACHE_DEFAULTS.ttlMs : c.ttlMs === Infinity ? Infinity : checkMs(where, 'cache.ttlMs', c.ttlMs, 'zero');
  if (c.key !== undefined && typeof c.key !== 'function') fail(where, 'cache.key', 'a function (item) => key', c.key);
  return { maxEntries, ttlMs, key: c.key };
}

const WARMUP_KEYS = optionKeys<WarmupOptions<unknown>>({ samples: true, batchSizes: true });

/** The default warm-up batch sizes: 1, the powers of 2 below `maxBatchSize`, and `maxBatchSize`. @internal */
export function defaultWarmupSizes(maxBatchSize: number): number[] {
  const sizes: number[] = [];
  for (let n = 1; n < maxBatchSize; n *= 2) sizes.push(n);
  sizes.push(maxBatchSize);
  return sizes;
}

/** Checks `warmup`; fills in the default batch sizes. @internal */
function resolveWarmup(where: string, value: unknown, maxBatchSize: number): { samples: readonly unknown[]; batchSizes: readonly number[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'warmup', 'an object { samples, batchSizes? }', value);
  rejectUnknownKeys(`${where}: warmup`, value, WARMUP_KEYS);
  const w = value as WarmupOptions<unknown>;
  if (!Array.isArray(w.samples) || w.samples.length === 0) fail(where, 'warmup.samples', 'a non-empty array of requests', w.samples);
  let sizes: number[];
  if (w.batchSizes === undefined) {
    sizes = defaultWarmupSizes(maxBatchSize);
  } else {
    if (!Array.isArray(w.batchSizes) || w.batchSizes.length === 0) fail(where, 'warmup.batchSizes', 'a non-empty array of batch sizes', w.batchSizes);
    for (const n of w.batchSizes) {
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > maxBatchSize) {
        fail(where, 'warmup.batchSizes', `batch sizes from 1 to maxBatchSize (${maxBatchSize})`, n, RangeError);
      }
    }
    sizes = [...(w.batchSizes as number[])];
  }
  return { samples: [...w.samples], batchSizes: sizes };
}
