import type { TensorSignature } from '../core/servable';
import type { GenerativeServable, GeneratorEntry, InferenceServable, ServerLimits } from '../serving';
import type { LogOption } from './logger';

export type { GeneratorEntry, ResolvedLimits, ServerLimits, Tokenizer } from '../serving';
export { DEFAULT_LIMITS } from '../serving';

/**
 * One input or output of a served model.
 * @deprecated Use `TensorSignature` (from `microbatch`), the one tensor-signature type.
 */
export type ServedTensor = TensorSignature;

/**
 * What the server needs from a batching model.
 * @deprecated Use `Servable` (from `microbatch`): the server takes a `ServableWith<'inference' | 'model' | 'stop'>`
 * whose `inference()` maps feeds to outputs (`InferenceServable`).
 */
export type ServableModel = InferenceServable;

/**
 * What the generate routes need from a generative model.
 * @deprecated Use `Servable` (from `microbatch`): the generate routes take a `ServableWith<'generate' | 'stop'>`.
 */
export type ServableGenerator = GenerativeServable;

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

/** Options of {@link createInferenceServer}. */
export interface InferenceServerOptions {
  /**
   * The models to serve, by the name used in URLs (`/v2/models/{name}/infer`). A promise is
   * allowed: the server can listen (`/v2/health/live` answers) while a model loads, and `/v2/health/ready` turns
   * ready once every model is loaded.
   * @example `{ models: { classifier: await createOnnxHost('cls.onnx', { maxBatchSize: 32 }) } }`
   */
  models: Readonly<Record<string, InferenceServable | PromiseLike<InferenceServable>>>;
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
  generators?: Readonly<Record<string, GenerativeServable | GeneratorEntry | PromiseLike<GenerativeServable | GeneratorEntry>>>;
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
  /**
   * Origins whose pages may call the server from a browser (CORS): each an origin such as
   * `'https://app.example.com'` (scheme, host, optional port), or `'*'` for any. A preflight
   * (`OPTIONS`) from an allowed origin is answered 204 with `Access-Control-Allow-Origin`,
   * `-Methods`, `-Headers` (`Content-Type`, `Content-Encoding`, `Inference-Header-Content-Length`,
   * `Timeout-Ms`) and `-Max-Age`; its answers carry `Access-Control-Allow-Origin` and expose
   * `Inference-Header-Content-Length`, `Content-Encoding` and `Retry-After`. Another origin gets no
   * CORS headers, so its browser blocks the call; every answer says `Vary: Origin`. Without it
   * (the default) the server sends no CORS headers and `OPTIONS` answers 405.
   * @default none
   * @example `corsOrigins: ['https://app.example.com', 'http://localhost:5173']`
   */
  corsOrigins?: readonly string[];
  /**
   * Serve the live dashboard at `GET /dashboard`: one page, per model requests/s, queue depth,
   * the batch-size histogram, latency p50/p99, release reasons and refusals, updated every second
   * over Server-Sent Events (`GET /dashboard/events`); see docs/observability.md. The hosts' events
   * are listened to only while a page is open. `microbatch serve` turns it on (`--no-dashboard`).
   * @default false
   * @example `createInferenceServer({ models, dashboard: true })`
   */
  dashboard?: boolean;
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
