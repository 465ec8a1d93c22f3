import type { IncomingMessage, ServerResponse } from 'node:http';
import { matchRoute } from './routes';
import type { InferenceServer } from './server';

/** Options of {@link expressMiddleware} and {@link fastifyPlugin}. */
export interface MountOptions {
  /**
   * Answer `GET /metrics` from the server's `metrics` source. `false` leaves `/metrics` to the app
   * (its own prom-client route, say).
   * @default true
   */
  metrics?: boolean;
}

/** An Express/Connect middleware: `(req, res, next)`. */
export type ConnectMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * Whether a request is the server's: a protocol path (`/v2...`, a wrong method included, which
 * answers 405), or `/metrics` unless left to the app. Anything else belongs to the app.
 * @internal
 */
export function isServerRoute(method: string, url: string, options: MountOptions): boolean {
  const found = matchRoute(method, url);
  if (found.kind === 'not-found') return /^\/v2(?:[/?]|$)/.test(found.path);
  return options.metrics !== false || found.path !== '/metrics';
}

/**
 * Mounts an inference server in an Express or Connect app: requests to its routes (`/v2/...`,
 * `/metrics`) are answered exactly as the standalone server answers them (limits, 503 +
 * `Retry-After` when the queue is full, draining on `close()`), and every other request goes on
 * to the app's next handler. Mount it before any body parser (`express.json()`): it reads the
 * body itself, with its own `maxBodyBytes`; mounted after one, it answers 500 `body_consumed`.
 * Mounted under a path (`app.use('/inference', ...)`), its routes are under that path.
 *
 * The server's `close({ drain })` still drains: it answers new inference requests 503
 * `shutting_down`, waits for those in flight, and stops the models; closing the app's own HTTP
 * server is the app's business.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { createInferenceServer, expressMiddleware } from 'microbatch/http';
 *
 * const inference = createInferenceServer({ models: { classifier: host } });
 * const app = express();
 * app.use(expressMiddleware(inference));   // POST /v2/models/classifier/infer, /v2/health/ready...
 * app.get('/', (req, res) => res.send('my app'));
 * app.listen(8080);
 * ```
 */
export function expressMiddleware(server: InferenceServer, options: MountOptions = {}): ConnectMiddleware {
  return (req, res, next) => {
    if (!isServerRoute(req.method ?? 'GET', req.url ?? '/', options)) return next();
    server.handle(req, res);
  };
}
