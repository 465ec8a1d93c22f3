import { MicrobatchError } from '../../core/errors';

/**
 * The model host behind a socket cannot be reached: the client is not connected (the host process
 * is down or restarting; the client reconnects by itself), or the connection was lost while the
 * request was in flight (the message says which; in the second case the request may or may not
 * have run). Retry later, or answer 503.
 *
 * @example
 * ```ts
 * try { return await client.inference(x); }
 * catch (e) { if (e instanceof HostUnavailableError) res.writeHead(503, { 'Retry-After': '1' }); }
 * ```
 */
export class HostUnavailableError extends MicrobatchError {
  /** The socket path of the host. */
  readonly path: string;
  constructor(message: string, path: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.path = path;
  }
}
