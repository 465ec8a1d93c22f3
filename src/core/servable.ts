import type { RequestOptions } from './options';

/**
 * One input or output of a model: its name, element type, declared dims and batch axis. The one
 * tensor-signature type: `describeModel` (microbatch/onnx) reports it, a Redis replica publishes
 * it, and the serving core checks requests against it.
 *
 * @example
 * ```ts
 * const input: TensorSignature = { name: 'x', dtype: 'float32', dims: ['N', 8], batchAxis: 0 };
 * ```
 */
export interface TensorSignature {
  /** The name in feeds and results. */
  readonly name: string;
  /** The element type (`'float32'`, `'int64'`, `'string'`...). */
  readonly dtype: string;
  /** Declared dims: numbers are fixed, strings are symbolic (any size). */
  readonly dims: ReadonlyArray<number | string>;
  /** The batch axis, or `'shared'` for an input that is the same for a whole batch. */
  readonly batchAxis: number | 'shared';
}

/**
 * A model's inputs and outputs, and its platform in the Open Inference Protocol's
 * `<framework>_<format>` convention.
 *
 * @example
 * ```ts
 * const signature: ModelSignature = {
 *   inputs: [{ name: 'x', dtype: 'float32', dims: ['N', 8], batchAxis: 0 }],
 *   outputs: [{ name: 'y', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }],
 * };
 * ```
 */
export interface ModelSignature {
  readonly inputs: readonly TensorSignature[];
  readonly outputs: readonly TensorSignature[];
  /** @default 'onnxruntime_onnx' */
  readonly platform?: string;
}

/** What a generation request may ask (a subset of `GenerateOptions`, which every generator takes). */
export interface ServableGenerateOptions {
  maxTokens?: number;
  signal?: AbortSignal;
  priority?: number;
  timeoutMs?: number;
  stopTokens?: readonly number[];
}

/** A stream of generated token ids; it throws the sequence's error, if any. */
export type ServableTokenStream = AsyncIterable<number> & {
  /** Why the stream ended once it ended cleanly (`'stop'`: a stop token, `'length'`: `maxTokens`). */
  readonly finishReason?: string | undefined;
};

/**
 * The one host contract: what every transport (HTTP, the socket and Redis servers), the metric
 * adapters and the CLI accept, and what `ModelHost`, `GenerationHost` and the remote clients
 * implement. Structural, so a consumer needs no import of the engine, and a test double or a
 * host of your own can be served.
 *
 * A servable has one or both capabilities: `inference()` (one request, batched with concurrent
 * ones) and `generate()` (a token stream). The rest is optional: what a consumer reads when it is
 * there (the model's signature for request checks, limits and counters for metrics and
 * scheduling, readiness for probes). Each consumer states which members it needs with
 * {@link ServableWith} and checks them once, when it is handed the servable.
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 *
 * @example
 * ```ts
 * const servable: Servable<number[], number> = {
 *   name: 'sum',
 *   inference: async (xs) => xs.reduce((a, b) => a + b, 0),
 *   stop: async () => undefined,
 * };
 * ```
 */
export interface Servable<In = never, Out = unknown> {
  /**
   * The name its events and statistics carry (a `ModelHost` always has one; a consumer that needs
   * it, such as the metric adapters, asks for it with {@link ServableWith}).
   * @default undefined (events and statistics of this servable cannot be told apart)
   */
  readonly name?: string | undefined;
  /**
   * The model version serving now; it changes when the host reloads.
   * @default '1'
   */
  readonly version?: string | undefined;
  /**
   * Whether it can serve now (a remote front end is ready while a replica is in sight). While
   * false, readiness probes answer "not ready"; requests are still accepted.
   * @default true
   */
  readonly ready?: boolean | undefined;
  /** The model's inputs and outputs, which requests are checked against before they are queued. */
  readonly model?: ModelSignature | undefined;
  /** Current limits: `maxBatchSize` bounds one request's rows; the rest is reported. */
  readonly options?: ServableLimits | undefined;
  /** Live counters. */
  readonly stats?: ServableStats | undefined;
  /** Runs one request (batched with concurrent ones). */
  inference?(item: In, options?: RequestOptions): Promise<Out>;
  /** Generates from token ids. */
  generate?(prompt: readonly number[], options?: ServableGenerateOptions): ServableTokenStream;
  /**
   * Stops it (draining when asked); the HTTP server calls it on close. The socket and Redis
   * servers and the metric adapters never stop what they are handed, and do not ask for it.
   */
  stop?(options?: { drain?: boolean }): Promise<void>;
}

/** A servable's limits, as consumers read them. */
export interface ServableLimits {
  readonly maxBatchSize: number;
  readonly maxConcurrentBatches?: number;
  readonly maxDelayMs?: number;
  readonly maxQueueSize?: number;
  /**
   * Its own time limit per request in milliseconds (`Infinity`: none): a transport passes a
   * shorter one only when its client or server asks for less.
   * @default Infinity
   */
  readonly timeoutMs?: number;
}

/** A servable's live counters, as consumers read them. */
export interface ServableStats {
  /** Requests (or prompts) waiting. */
  readonly queued: number;
  /** Requests (or sequences) running. */
  readonly running: number;
  /** Batches running now. */
  readonly runningBatches?: number;
  /** Present on hosts with the `cache` option. */
  readonly cache?: { readonly hits: number; readonly shared: number; readonly misses: number; readonly size: number };
}

/**
 * A {@link Servable} with the named optional members present: what a consumer that needs them
 * accepts (the Redis replica needs `inference`, `options` and `stats`).
 *
 * @example
 * ```ts
 * function watch(host: ServableWith<'stats' | 'options'>): number { return host.stats.queued / host.options.maxBatchSize; }
 * ```
 */
export type ServableWith<K extends keyof Servable, In = never, Out = unknown> = Servable<In, Out> & { readonly [P in K]-?: NonNullable<Servable<In, Out>[P]> };

const KINDS: Readonly<Record<keyof Servable, 'function' | 'object' | 'string' | 'boolean'>> = {
  name: 'string',
  version: 'string',
  ready: 'boolean',
  model: 'object',
  options: 'object',
  stats: 'object',
  inference: 'function',
  generate: 'function',
  stop: 'function',
};

/**
 * Whether `value` is a {@link Servable} with the named members present (functions for
 * `inference`, `generate` and `stop`, objects for `model`, `options` and `stats`): how a consumer
 * checks, once, what it is handed, before it says what it expected and what came.
 *
 * @example
 * ```ts
 * if (!isServableWith(host, ['inference', 'stats', 'options'])) throw new TypeError(`expected a host with inference(), stats and options; got ${describe(host)}`);
 * ```
 */
export function isServableWith<K extends keyof Servable>(value: unknown, members: readonly K[]): value is ServableWith<K> {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  for (const m of members) {
    const kind = typeof v[m];
    if (kind !== KINDS[m] || (kind === 'object' && v[m] === null)) return false;
  }
  return true;
}
