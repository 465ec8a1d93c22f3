import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe } from '../core/describe';
import { HEADER_LENGTH } from './encode-response';
import { TIMEOUT_HEADER } from './infer';

/** How long a browser may keep a preflight answer, in seconds. */
const MAX_AGE_SECONDS = 600;
/** The request headers a page may send: the protocol's, compression's and the time limit's. */
const ALLOWED_HEADERS = ['Content-Type', 'Content-Encoding', HEADER_LENGTH, TIMEOUT_HEADER].join(', ');
/** The answer headers a page may read beyond the safelisted ones: binary framing, compression, back-off. */
const EXPOSED_HEADERS = [HEADER_LENGTH, 'Content-Encoding', 'Retry-After'].join(', ');
const METHODS = 'GET, HEAD, POST, OPTIONS';

/**
 * Checks allowed origins: each is `'*'` (any origin) or an origin such as
 * `https://app.example.com` (scheme, host and optional port, no path), else a `TypeError` naming it.
 * @internal
 */
export function checkCorsOrigins(where: string, origins: unknown): readonly string[] {
  if (!Array.isArray(origins)) throw new TypeError(`${where}: expected \`corsOrigins\` to be an array of origins such as 'https://app.example.com' (or '*'), got ${describe(origins)}`);
  for (const o of origins as unknown[]) {
    if (o !== '*' && (typeof o !== 'string' || !/^https?:\/\/[^/?#\s]+$/i.test(o))) {
      throw new TypeError(`${where}: a CORS origin is '*' or a scheme, host and optional port such as 'https://app.example.com' (no path, no trailing slash), got ${describe(o)}`);
    }
  }
  return origins as readonly string[];
}

/** The origins allowed to call the server from a browser (`corsOrigins`), checked once. @internal */
export class CorsPolicy {
  readonly #any: boolean;
  readonly #origins: ReadonlySet<string>;

  constructor(where: string, origins: readonly string[]) {
    checkCorsOrigins(where, origins);
    this.#any = origins.includes('*');
    this.#origins = new Set(origins.map((o) => o.toLowerCase()));
  }

  /**
   * Adds the CORS headers an answer to `req` needs (`Vary: Origin` always, the rest for an allowed
   * origin); answers a preflight (`OPTIONS` with `Access-Control-Request-Method`) itself with 204
   * and returns true, which the server then answers no further.
   */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    const allowed = typeof origin === 'string' && (this.#any || this.#origins.has(origin.toLowerCase()));
    if (allowed) res.setHeader('Access-Control-Allow-Origin', origin);
    const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
    if (!preflight) {
      if (allowed) res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
      return false;
    }
    if (allowed) {
      res.setHeader('Access-Control-Allow-Methods', METHODS);
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', String(MAX_AGE_SECONDS));
    }
    res.writeHead(204, { 'Content-Length': '0' });
    res.end();
    return true;
  }
}
