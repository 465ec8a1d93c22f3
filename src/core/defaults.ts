import type { CacheOptions, HostOptions } from './host-options';

/*
 * The library's defaults, in one table: host options (`resolveOptions`, `resolveTunable`), the
 * response cache, the adaptive policy, generation hosts (`resolveGeneration`) and the CLI read
 * them here, and test/core/defaults.test.ts fails when a TSDoc `@default` of those options states
 * another value. Where a server deliberately differs from the library, SERVING_DEFAULTS says so.
 */

/** The defaults of the optional {@link HostOptions}. @internal */
export const HOST_DEFAULTS: Readonly<
  Required<Pick<HostOptions<unknown, unknown>, 'maxDelayMs' | 'maxConcurrentBatches' | 'maxQueueSize' | 'timeoutMs' | 'maxLatencyMs' | 'batchTimeoutMs' | 'isolateErrors' | 'splitOversize' | 'name'>> & {
    policy: 'greedy';
  }
> = {
  maxDelayMs: 0,
  maxConcurrentBatches: 1,
  maxQueueSize: Infinity,
  timeoutMs: Infinity,
  maxLatencyMs: Infinity,
  batchTimeoutMs: Infinity,
  policy: 'greedy',
  isolateErrors: false,
  splitOversize: false,
  name: 'microbatch',
};

/** The defaults of {@link CacheOptions} (`cache: true` takes them all). @internal */
export const CACHE_DEFAULTS: Readonly<Required<Pick<CacheOptions<unknown>, 'maxEntries' | 'ttlMs'>>> = {
  maxEntries: 1000,
  ttlMs: Infinity,
};

/** The defaults of `AdaptivePolicyOptions` (besides `latencyModel`: a new `LatencyModel`). @internal */
export const ADAPTIVE_DEFAULTS = {
  maxWaitMs: Infinity,
  marginMs: 0,
  minWaitMs: 1,
  patience: 0.5,
  rateWindow: 32,
  planBatches: 8,
  overloadMs: 1000,
} as const satisfies Readonly<Record<string, number>>;

/** The defaults of `GenerationOptions` (a generation host's). @internal */
export const GENERATION_DEFAULTS = {
  maxTokens: 256,
  maxQueueSize: Infinity,
  timeoutMs: Infinity,
  name: 'generation',
} as const satisfies Readonly<Record<string, number | string>>;

/**
 * Where serving a model over a network deliberately differs from the library's defaults: what
 * `microbatch serve` starts from, and what any server of a model should. Options not listed here
 * serve with the library's defaults ({@link HOST_DEFAULTS}). @internal
 */
export const SERVING_DEFAULTS = {
  /**
   * The library has no default: `maxBatchSize` is required, because only the program knows its
   * model. A server is handed a model file and must pick one; 32 rows is past the point where
   * most models' cost per row stops falling (`microbatch bench` measures a model's own).
   */
  maxBatchSize: 32,
  /**
   * The library queues without bound (`Infinity`): the program calling it owns its backpressure.
   * A server's clients are not under its control: past 1024 waiting requests it refuses at once
   * (503 + Retry-After), so that a client can retry elsewhere, rather than let the queue and
   * everyone's latency grow without end.
   */
  maxQueueSize: 1024,
  /**
   * The library sets no time limit (`Infinity`): a caller may wait as long as it likes. A server
   * answers 504 after 30 s rather than hold a connection and a queue slot forever (clients and
   * proxies have mostly given up by then).
   */
  timeoutMs: 30_000,
} as const satisfies Readonly<Partial<Record<keyof HostOptions<unknown, unknown>, number>>>;
