import type { TensorSignature } from '../core/servable';
import type { GenerativeServable, InferenceServable, ServingCore, ServingCoreOptions } from '../serving';

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

/**
 * Options of {@link createInferenceServer}: a serving core's (`models`, `generators`, `limits`,
 * `log`, `stopModelsOnClose`: the server makes a core of its own from them), or an existing `core`,
 * and what only HTTP has (`metrics`, `int64As`, `corsOrigins`).
 */
export interface InferenceServerOptions extends ServingCoreOptions {
  /**
   * A serving core to serve instead of one of the server's own: its models, generators, limits and
   * log (so `models`, `generators`, `limits`, `log` and `stopModelsOnClose` are refused beside it).
   * Share one core between this server and a gRPC server, and calls of both land in the same
   * batches. A server closes only a core it made itself: close a shared one yourself
   * (`handleShutdownSignals([http, grpc, core])`).
   * @default a core of its own, made from the options
   * @example `createInferenceServer({ core: createServingCore({ models: { classifier: host } }) })`
   */
  core?: ServingCore;
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
