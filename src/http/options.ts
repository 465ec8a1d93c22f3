import type { RequestOptions } from '../core/options';
import type { TensorLike } from '../tensor/tensor-like';
import type { LogOption } from './logger';

/** One input or output of a served model, as `describeModel` (from `microbatch/onnx`) reports it. */
export interface ServedTensor {
  /** The name in feeds and results. */
  readonly name: string;
  /** The tensor type (`'float32'`, `'int64'`, `'string'`...). */
  readonly dtype: string;
  /** Declared dims: numbers are fixed, strings are symbolic (any size). */
  readonly dims: ReadonlyArray<number | string>;
  /** The batch axis, or `'shared'` for an input that is the same for a whole batch. */
  readonly batchAxis: number | 'shared';
}

/**
 * What the server needs from a model: a host that takes the feeds of one request (tensors by
 * input name) and answers that request's outputs, plus the model's metadata, which requests are
 * checked against before they are queued. An `OnnxHost` from `createOnnxHost` is one, and so is a
 * worker-backed host with a `model` property (see `createServingHost`).
 *
 * @example
 * ```ts
 * const host = await createOnnxHost('model.onnx', { maxBatchSize: 32, maxQueueSize: 256 });
 * createInferenceServer({ models: { classifier: host } });
 * ```
 */
export interface ServableModel {
  /**
   * The model's inputs and outputs, and its platform in the protocol's `<framework>_<format>`
   * convention (`GET /v2/models/{name}` reports it).
   */
  readonly model: {
    readonly inputs: readonly ServedTensor[];
    readonly outputs: readonly ServedTensor[];
    /** @default 'onnxruntime_onnx' */
    readonly platform?: string;
  };
  /**
   * The host's settings: `maxBatchSize` bounds the batch dimension of one request; all are
   * reported by `GET /v2/models/{name}/config`.
   */
  readonly options?: { readonly maxBatchSize: number; readonly maxDelayMs?: number; readonly maxQueueSize?: number };
  /**
   * The host's name, which its batch and request events carry: `GET /v2/models/{name}/stats`
   * reports the events of the host with this name (a `ModelHost` has one).
   * @default undefined (no statistics)
   */
  readonly name?: string;
  /**
   * The model version serving now, the only one the `versions/{v}` paths accept and what answers
   * report as `model_version`; it changes when the host reloads (a `ModelHost` counts its reloads).
   * @default '1'
   */
  readonly version?: string;
  /** Runs one request (batched with concurrent ones). */
  inference(feeds: Record<string, TensorLike>, options?: RequestOptions): Promise<Record<string, TensorLike>>;
  /**
   * Whether the model can serve now, for hosts that can lose what serves them (a
   * `connectRedisHost` front end is ready while a replica is in sight). While false, the
   * readiness routes answer 503; inference requests are still accepted. Absent means always ready.
   */
  readonly ready?: boolean;
  /** Stops the host; the server calls it on `close()` (draining when asked). */
  stop(options?: { drain?: boolean }): Promise<void>;
}

/**
 * What the generate routes need from a generative model: `GenerationHost` fits. It is a shape
 * rather than the class so that other hosts (a remote front end, a test double) can be served.
 *
 * @example
 * ```ts
 * const generator: ServableGenerator = new GenerationHost(step, { maxBatchSize: 16, initialState });
 * ```
 */
export interface ServableGenerator {
  /** Generates from token ids; the stream yields token ids and throws the sequence's error, if any. */
  generate(
    prompt: readonly number[],
    options?: { maxTokens?: number; signal?: AbortSignal; priority?: number; timeoutMs?: number; stopTokens?: readonly number[] },
  ): AsyncIterable<number> & {
    /** Why the stream ended once it ended cleanly (`'stop'`: a stop token, `'length'`: `maxTokens`); answers report it as `finish_reason`. */
    readonly finishReason?: string;
  };
  /** Stops the host; the server calls it on `close()` (draining when asked). */
  stop(options?: { drain?: boolean }): Promise<void>;
  /** The version it serves. @default '1' */
  readonly version?: string;
}

/**
 * Turns text into token ids and back, for `text_input` / `text_output` on the generate routes.
 *
 * @example
 * ```ts
 * const tokenizer: Tokenizer = { encode: (text) => [...text].map((c) => c.charCodeAt(0)), decode: (ids) => String.fromCharCode(...ids) };
 * ```
 */
export interface Tokenizer {
  /** Token ids of a text (add the begin-of-sequence token here if the model needs one). */
  encode(text: string): number[];
  /** The text of token ids; the stream calls it with one token per event. */
  decode(tokens: readonly number[]): string;
}

/** A generative model with a tokenizer, for {@link InferenceServerOptions.generators}. */
export interface GeneratorEntry {
  /** The generative model. */
  readonly host: ServableGenerator;
  /** Its tokenizer: requests may then send `text_input`, and answers carry `text_output`. @default none */
  readonly tokenizer?: Tokenizer;
}

/**
 * Where `/metrics` text comes from: a function returning Prometheus exposition text, or an object
 * with `metrics()` and an optional `contentType`, which a prom-client `Registry` is.
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * const registry = new Registry();
 * createInferenceServer({ models, metrics: registry });
 * // or: metrics: () => myText()
 * ```
 */
export type MetricsSource = (() => string | Promise<string>) | { metrics(): string | Promise<string>; readonly contentType?: string };

/**
 * Limits that keep one client from hurting the others. Every one has a safe default. The host's
 * own `maxQueueSize` also applies (a full queue answers 503 with `Retry-After`).
 */
export interface ServerLimits {
  /**
   * Largest request body in bytes. A larger `Content-Length` is refused with 413 before the body
   * is read; a chunked body is cut off (413) as soon as it passes the limit.
   * @default 16777216 (16 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Most tensor elements in one request, summed over its inputs (400 past it), so that a small
   * body cannot declare a huge shape and a large one cannot pin the model.
   * @default 4194304 (2^22)
   */
  maxElements?: number;
  /**
   * Per-request time limit in milliseconds when the client names none; past it the answer is 504.
   * A client may ask for another with the `Timeout-Ms` header or `parameters.timeout_ms` in the body.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * The longest time limit a client may ask for; larger requests are clamped to it.
   * @default 120000
   */
  maxTimeoutMs?: number;
  /**
   * The `Retry-After` seconds sent with 503 answers (queue full, shed, stopping).
   * @default 1
   */
  retryAfterSeconds?: number;
  /**
   * Most inference requests the server holds at once, from reading the body to the answer
   * (queued in the host or running included). One more is answered 503 `queue_full` with
   * `Retry-After` at once, before its body is read. This bounds memory and waiting even when the
   * host's own `maxQueueSize` is left unbounded (its default); `Infinity` turns it off.
   * @default 1024
   */
  maxConcurrentRequests?: number;
  /**
   * Time allowed to receive a whole request, headers and body (Node's `server.requestTimeout`):
   * a client that trickles bytes is cut off with 408.
   * @default 60000
   */
  requestTimeoutMs?: number;
}

/** The limits with their defaults filled in. @internal */
export type ResolvedLimits = Required<ServerLimits>;

/** The defaults of {@link ServerLimits}. */
export const DEFAULT_LIMITS: Readonly<Required<ServerLimits>> = {
  maxBodyBytes: 16 * 1024 * 1024,
  maxElements: 2 ** 22,
  timeoutMs: 30_000,
  maxTimeoutMs: 120_000,
  retryAfterSeconds: 1,
  maxConcurrentRequests: 1024,
  requestTimeoutMs: 60_000,
};

/** Options of {@link createInferenceServer}. */
export interface InferenceServerOptions {
  /**
   * The models to serve, by the name used in URLs (`/v2/models/{name}/infer`). A promise is
   * allowed: the server can listen (`/v2/health/live` answers) while a model loads, and `/v2/health/ready` turns
   * ready once every model is loaded.
   * @example `{ models: { classifier: await createOnnxHost('cls.onnx', { maxBatchSize: 32 }) } }`
   */
  models: Readonly<Record<string, ServableModel | PromiseLike<ServableModel>>>;
  /**
   * Generative models, by name, served on Triton's generate extension
   * (`POST /v2/models/{name}/generate` and `/generate_stream`): a `GenerationHost` (token ids in
   * and out), or `{ host, tokenizer }` to take `text_input` and answer `text_output` too. Names
   * must differ from those in `models`, which may then be empty. A promise of either is allowed
   * and loads in the background, as in `models` (`503 model_loading` until it resolves; one that
   * rejects is `model_unavailable`).
   * @default none
   * @example `{ generators: { writer: { host: generationHost, tokenizer: { encode, decode } } } }`
   */
  generators?: Readonly<Record<string, ServableGenerator | GeneratorEntry | PromiseLike<ServableGenerator | GeneratorEntry>>>;
  /**
   * Size and time limits; see {@link ServerLimits}.
   * @default {@link DEFAULT_LIMITS}
   */
  limits?: ServerLimits;
  /**
   * What `GET /metrics` serves; without it `/metrics` answers 404.
   * @default undefined
   */
  metrics?: MetricsSource;
  /**
   * How 64-bit integers (`INT64`, `UINT64`) are written in JSON answers: `'number'` writes exact
   * digits as JSON numbers (clients parsing into doubles lose precision past 2^53), `'string'`
   * writes them as decimal strings. Requests may use either form.
   * @default 'number'
   */
  int64As?: 'number' | 'string';
  /**
   * Stop the hosts when the server closes (draining them when `close({ drain: true })`).
   * @default true
   */
  stopModelsOnClose?: boolean;
  /**
   * Logging: levels, text or JSON lines, and repeated refusals summarised (`503 queue_full ×812 in
   * the last 5 s`) instead of one line each; see {@link LogOptions}. A function receives every
   * line as text at level `'info'`. Nothing is logged without it.
   * @default undefined
   * @example `log: { level: 'warn', format: 'json' }` or `log: (line) => console.error(line)`
   */
  log?: LogOption;
}

/** Options of `close()`. */
export interface CloseOptions {
  /**
   * `true`: answer every request already received, then stop the hosts draining their queues.
   * `false`: stop the hosts at once (queued requests are answered 503) and close every connection.
   * @default true
   */
  drain?: boolean;
  /**
   * The longest a draining close waits for in-flight requests before closing connections anyway.
   * @default 30000
   */
  timeoutMs?: number;
}
