import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpError } from './http-error';

/** Sends a complete answer, unless one was sent already or the client is gone. @internal */
export function send(res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer | string): void {
  if (res.headersSent || res.destroyed) return;
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  res.writeHead(status, { ...headers, 'Content-Length': String(bytes.length) });
  res.end(bytes);
}

/** Sends a JSON value with a status. @internal */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  send(res, status, { 'Content-Type': 'application/json', ...headers }, JSON.stringify(value));
}

/**
 * Sends `{ "error": "<message>", "code": "<code>" }` with the error's status and headers: `error`
 * is the protocol's descriptive string, `code` microbatch's stable identifier beside it. When the body
 * was not read to its end (a 413, or a refusal before reading), the connection is closed after
 * the answer instead of reading and discarding the rest: the client may be sending a lot.
 * @internal
 */
export function sendError(req: IncomingMessage, res: ServerResponse, error: HttpError, extraHeaders: Record<string, string> = {}): void {
  const headers: Record<string, string> = { ...error.headers, ...extraHeaders };
  const unread = !req.complete || error.status === 413;
  if (unread) headers.Connection = 'close';
  sendJson(res, error.status, { error: error.message, code: error.code }, headers);
  if (unread) res.once('finish', () => req.socket.destroySoon());
}
