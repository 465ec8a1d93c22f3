import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe } from '../core/describe';
import { checkVersion, generatorMetadata, invalidArgument, modelConfig, modelMetadata, servedVersion, serverMetadata, ServingCore, shuttingDown } from '../serving';
import { CorsPolicy } from './cors';
import { dashboardOption } from './dashboard/handler';
import { handleInfer } from './infer';
import { HttpError, toHttpError } from './http-error';
import { handleGenerate } from './generate';
import type { CloseOptions, InferenceServerOptions, MetricsSource } from './options';
import { sendError, sendJson, send } from './respond';
import { matchRoute, type RouteName } from './routes';
import { handleRepositoryRoute, isRepositoryPath } from './repository-routes';

/** What {@link createInferenceServer} returns. */
export interface InferenceServer {
  /** The underlying `node:http` server (for TLS termination in front, custom timeouts, tests). */
  readonly server: Server;
  /**
   * The request listener, for mounting in an existing `node:http` server or an Express/Connect
   * app at the root (`app.use(inference.handle)`).
   */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** The serving core it serves: its own (made from `models`) or the one it was given. */
  readonly core: ServingCore;
  /** True once every model is loaded and the server is not closing (what `/v2/health/ready` reports). */
  readonly ready: boolean;
  /**
   * Starts listening and resolves with the bound address (port 0 picks a free port).
   * @param port - @default 8080
   * @param host - the interface to bind; `'0.0.0.0'` exposes the server beyond this machine. @default '127.0.0.1'
   */
  listen(port?: number, host?: string): Promise<AddressInfo>;
  /**
   * Stops accepting connections and closes the server; see {@link CloseOptions}. Idempotent: a
   * second call returns the first call's promise.
   */
  close(options?: CloseOptions): Promise<void>;
}

/** The server's core: the one it was given, or its own made from `models` (what may stand beside `core` is checked). */
function serverCore(options: InferenceServerOptions): ServingCore {
  if (options.core === undefined) return new ServingCore(options, 'createInferenceServer');
  if (!(options.core instanceof ServingCore)) throw new TypeError(`createInferenceServer: expected \`core\` to be a ServingCore (from createServingCore), got ${describe(options.core)}`);
  const beside = (['models', 'generators', 'limits', 'log', 'stopModelsOnClose'] as const).filter((k) => options[k] !== undefined);
  if (beside.length > 0) throw new TypeError(`createInferenceServer: \`core\` already holds the models, limits and log; pass ${beside.map((k) => `\`${k}\``).join(', ')} to createServingCore instead`);
  return options.core;
}

// Said to both kinds of users: a library user passes a source, a `microbatch serve` user installs prom-client.
const NO_METRICS =
  'this server has no metrics source: in code, pass `metrics` (a prom-client Registry or a function) to createInferenceServer; with `microbatch serve`, install prom-client (npm install prom-client) and restart, which turns /metrics on';

async function readMetrics(source: MetricsSource): Promise<{ text: string; contentType: string }> {
  const plain = 'text/plain; version=0.0.4; charset=utf-8';
  if (typeof source === 'function') return { text: await source(), contentType: plain };
  return { text: await source.metrics(), contentType: source.contentType ?? plain };
}

/**
 * An HTTP inference server on `node:http` (no framework) for one or more batching hosts. Every
 * request is one `host.inference()` call, so concurrent HTTP clients are batched together.
 *
 * Routes: the Open Inference Protocol's REST paths (`{name}` is a key of `models` or `generators`;
 * `/v2/models/{name}/versions/{v}/...` with the version the model serves now is the same route,
 * and another version is 404):
 *
 * | route | answer |
 * | --- | --- |
 * | `POST /v2/models/{name}[/versions/{v}]/infer` | JSON or binary tensors in, outputs out |
 * | `POST /v2/models/{name}[/versions/{v}]/generate` | a generator's tokens in one JSON answer (Triton's generate extension) |
 * | `POST /v2/models/{name}[/versions/{v}]/generate_stream` | the same as Server-Sent Events, one per token |
 * | `GET /v2/models/{name}[/versions/{v}]` | the model's metadata: inputs, outputs, platform |
 * | `GET /v2/models/{name}[/versions/{v}]/ready` | 200 `{ name, ready: true }`, else 503 |
 * | `GET /v2` | server metadata `{ name, version, extensions }` |
 * | `GET /v2/health/live` | 200 `{ live: true }` while the process serves |
 * | `GET /v2/health/ready` | 200 once every model is loaded and the server is not closing, else 503 |
 * | `GET /v2/models/{name}[/versions/{v}]/config` | Triton's model configuration (an extension) |
 * | `GET /v2/models/{name}[/versions/{v}]/stats` | Triton's statistics: counts, queue and compute time, per batch size (an extension) |
 * | `GET /v2/models` | the served models and their state (an extension) |
 * | `POST /v2/repository/index`, `/v2/repository/models/{name}/load`, `.../unload` | Triton's model repository extension, for a core a `ModelRepository` fills (`microbatch serve <dir>`) |
 * | `GET /metrics` | Prometheus text from `metrics`, or 404 without it |
 *
 * Failures answer the protocol's `{ "error": "<message>" }` with a stable `code` beside it: 400
 * for bad input (named), 404 for an unknown route, model or version, 405 with `Allow`, 413 past
 * `maxBodyBytes`, 503 + `Retry-After` when the queue is full (the host's `maxQueueSize`, or
 * `limits.maxConcurrentRequests`) or a request is shed, 504 past its time limit, 500 when the
 * model throws. The server never crashes on what a client sends.
 *
 * @example
 * ```ts
 * import { createOnnxHost } from 'microbatch/onnx';
 * import { createInferenceServer, handleShutdownSignals } from 'microbatch/http';
 *
 * const host = await createOnnxHost('classifier.onnx', { maxBatchSize: 32, maxQueueSize: 256 });
 * const server = createInferenceServer({ models: { classifier: host }, limits: { timeoutMs: 2000 } });
 * const { port } = await server.listen(8080);
 * handleShutdownSignals(server); // SIGTERM/SIGINT: stop accepting, drain, exit 0
 * ```
 */
export function createInferenceServer(options: InferenceServerOptions): InferenceServer {
  if (typeof options !== 'object' || options === null) throw new TypeError('createInferenceServer: expected options { models, limits?, metrics? } or { core, metrics? }');
  const core = serverCore(options);
  const ownsCore = !(options.core instanceof ServingCore);
  const { limits, logger, stats } = core;
  const int64As = options.int64As ?? 'number';
  if (int64As !== 'number' && int64As !== 'string') throw new TypeError(`createInferenceServer: \`int64As\` must be 'number' or 'string', got ${String(int64As)}`);
  const metrics = options.metrics;
  if (metrics !== undefined && typeof metrics !== 'function' && typeof metrics?.metrics !== 'function') {
    throw new TypeError('createInferenceServer: `metrics` must be a function returning Prometheus text, or an object with metrics() (a prom-client Registry)');
  }

  const dashboard = dashboardOption('createInferenceServer', options.dashboard, { registry: core.registry, stats });
  const cors = options.corsOrigins === undefined ? undefined : new CorsPolicy('createInferenceServer', options.corsOrigins);

  let closing = false;
  let closePromise: Promise<void> | undefined;
  let inFlight = 0;
  let idleWaiters: Array<() => void> = [];
  const retry = { 'Retry-After': String(limits.retryAfterSeconds) };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] as string;
    if (isRepositoryPath(path)) return handleRepositoryRoute(req, res, path, core.registry.repository, limits);
    const found = matchRoute(req.method ?? 'GET', req.url ?? '/');
    if (found.kind === 'not-found') throw new HttpError(404, 'not_found', `no route for ${req.method} ${found.path}; see GET /v2, /v2/models, /v2/health/live, /v2/health/ready, /metrics`);
    if (found.kind === 'bad-method') throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${found.path}; use ${found.allow}`, { Allow: found.allow });
    const name: RouteName = found.route;
    if (found.model !== '' && core.registry.kindOf(found.model) === 'generator') return routeGenerator(req, res, name, found.model, found.version);
    switch (name) {
      case 'server-metadata':
        return sendJson(res, 200, serverMetadata(core.registry.repository !== undefined));
      case 'live':
        return sendJson(res, 200, { live: true });
      case 'ready': {
        const ready = !closing && core.ready;
        const body = { live: true, ready, closing: closing || core.closing, models: core.registry.states() };
        return sendJson(res, ready ? 200 : 503, body, ready ? {} : retry);
      }
      case 'metrics': {
        if (metrics === undefined) throw new HttpError(404, 'not_found', NO_METRICS);
        const { text, contentType } = await readMetrics(metrics);
        return send(res, 200, { 'Content-Type': contentType }, text);
      }
      case 'models':
        return sendJson(res, 200, { models: core.registry.listing() });
      case 'model':
        return sendJson(res, 200, modelMetadata(found.model, core.model(found.model, found.version)));
      case 'model-ready': {
        const ready = core.modelReady(found.model, found.version) && !closing;
        return sendJson(res, ready ? 200 : 503, { name: found.model, ready }, ready ? {} : retry);
      }
      case 'config':
        return sendJson(res, 200, modelConfig(found.model, core.model(found.model, found.version)));
      case 'stats': {
        const host = core.model(found.model, found.version);
        return sendJson(res, 200, { model_stats: [stats.stats(found.model, servedVersion(host), host)] });
      }
      case 'generate':
      case 'generate-stream':
        return routeGenerator(req, res, name, found.model, found.version); // answers not_a_generator, or the 404
      case 'infer': {
        const host = core.model(found.model, found.version);
        if (closing) throw shuttingDown();
        core.enter(host.name, 'http'); // before the body is read
        try {
          return await handleInfer(req, res, { modelName: found.model, host, limits, int64As });
        } finally {
          core.leave();
        }
      }
    }
  }

  /** The routes of a generative model: metadata, ready, and Triton's generate and generate_stream. */
  async function routeGenerator(req: IncomingMessage, res: ServerResponse, name: RouteName, model: string, version: string | undefined): Promise<void> {
    switch (name) {
      case 'model':
        return sendJson(res, 200, generatorMetadata(model, servedVersion(core.generator(model, version).host), null));
      case 'model-ready': {
        const ready = core.modelReady(model, version) && !closing;
        return sendJson(res, ready ? 200 : 503, { name: model, ready }, ready ? {} : retry);
      }
      case 'generate':
      case 'generate-stream': {
        const { host, tokenizer } = core.generator(model, version);
        if (closing) throw shuttingDown();
        core.enter();
        try {
          return await handleGenerate(req, res, { modelName: model, host, tokenizer, limits }, name === 'generate-stream');
        } finally {
          core.leave();
        }
      }
      default: {
        const served = core.registry.servedVersion(model);
        if (served !== undefined) checkVersion(model, version, served);
        throw invalidArgument('not_a_batching_model', `model ${JSON.stringify(model)} is a generative model: send its requests to POST /v2/models/${model}/generate or /generate_stream (${req.method} ${req.url} is for batching models)`);
      }
    }
  }

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    inFlight++;
    res.once('close', () => {
      if (--inFlight === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const w of waiters) w();
      }
    });
    // While closing, ask keep-alive clients not to reuse the connection, so it can end.
    if (closing) res.setHeader('Connection', 'close');
    if (cors?.handle(req, res) === true) return; // a preflight, answered
    if (dashboard?.handle(req, res) === true) return;
    route(req, res).catch((e: unknown) => {
      const error = toHttpError(e, limits.retryAfterSeconds);
      logger.answer(error.status, error.code, `microbatch http: ${req.method} ${req.url} → ${error.status} ${error.code}: ${error.message}`, { method: req.method ?? '', path: req.url ?? '' });
      try {
        sendError(req, res, error);
      } catch {
        res.destroy(); // the response itself failed: drop the connection rather than the server
      }
    });
  };

  const server = createServer(handle);
  // An 'error' event with no listener would end the process (EMFILE on accept, for one): log it.
  server.on('error', (e) => {
    if (server.listening) logger.line('error', `microbatch http: server error: ${e.message}`); // listen() failures reject listen() instead
  });
  server.requestTimeout = limits.requestTimeoutMs;
  server.headersTimeout = Math.min(server.headersTimeout, limits.requestTimeoutMs);

  const whenIdle = (timeoutMs: number): Promise<void> =>
    new Promise((resolve) => {
      if (inFlight === 0) return resolve();
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });

  async function doClose(drain: boolean, timeoutMs: number): Promise<void> {
    closing = true;
    dashboard?.close(); // its streams never end by themselves
    const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    server.closeIdleConnections();
    if (drain) await whenIdle(timeoutMs);
    // A core of its own is closed with the server (stopping the models); a shared one is closed by its owner.
    if (ownsCore) await core.close({ drain, timeoutMs });
    await whenIdle(drain ? 1_000 : 100);
    server.closeAllConnections();
    await closed;
  }

  return {
    server,
    handle,
    core,
    get ready() {
      return !closing && core.ready;
    },
    listen(port = 8080, host = '127.0.0.1') {
      return new Promise<AddressInfo>((resolve, reject) => {
        const onError = (e: Error): void => reject(e);
        server.once('error', onError);
        server.listen(port, host, () => {
          server.off('error', onError);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close(closeOptions = {}) {
      closePromise ??= doClose(closeOptions.drain ?? true, closeOptions.timeoutMs ?? 30_000);
      return closePromise;
    },
  };
}
