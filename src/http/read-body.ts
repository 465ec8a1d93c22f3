import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error';

function tooLarge(maxBytes: number, what: string): HttpError {
  return new HttpError(413, 'payload_too_large', `the request body ${what} the limit of ${maxBytes} bytes (maxBodyBytes)`);
}

/**
 * The body a middleware mounted earlier already read: raw bytes (`express.raw()`) are used as
 * they are; a parsed value is refused, since re-encoding it would lose what JSON.parse lost
 * (64-bit integers past 2^53) and the binary extension's bytes.
 */
function consumedBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const body: unknown = (req as IncomingMessage & { body?: unknown }).body;
  if (Buffer.isBuffer(body)) return body.length > maxBytes ? Promise.reject(tooLarge(maxBytes, 'exceeds')) : Promise.resolve(body);
  return Promise.reject(
    new HttpError(500, 'body_consumed', 'the request body was already read by a body parser mounted before microbatch (express.json(), say); mount microbatch before body parsers'),
  );
}

/**
 * Reads a request body into one Buffer, refusing anything over `maxBytes` with a 413: at once when
 * `Content-Length` announces too much (nothing is read), else as soon as the bytes received pass
 * the limit (reading stops there). The caller closes the connection after a 413, since the rest
 * of the body is left unread.
 *
 * With `alignAt` (a byte offset in the body) and a `Content-Length`, the body is read into one
 * buffer of its own, placed so that `alignAt` falls on an 8-byte boundary: the binary tensors that
 * start there can then be viewed in place instead of copied out (the binary extension's
 * `Inference-Header-Content-Length` says where they start before the body arrives).
 * @internal
 */
export function readBody(req: IncomingMessage, maxBytes: number, alignAt?: number): Promise<Buffer> {
  if (req.readableEnded) return consumedBody(req, maxBytes);
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) return Promise.reject(tooLarge(maxBytes, `(Content-Length ${declared}) exceeds`));
  const length = declared === undefined ? Number.NaN : Number(declared);
  // One buffer sized from Content-Length: no chunk list, no concatenation. A fresh ArrayBuffer, so
  // the padding puts `alignAt` on an 8-byte boundary of memory, not just of the buffer.
  let fixed = alignAt !== undefined && Number.isSafeInteger(length) && length > 0 ? Buffer.allocUnsafeSlow(length + ((8 - (alignAt % 8)) % 8)).subarray((8 - (alignAt % 8)) % 8) : undefined;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      if (size + chunk.length > maxBytes) {
        cleanup();
        req.pause();
        reject(tooLarge(maxBytes, 'exceeds'));
        return;
      }
      if (fixed !== undefined && size + chunk.length <= fixed.length) chunk.copy(fixed, size);
      else {
        // More than Content-Length said (the parser does not let that happen): collect instead.
        if (fixed !== undefined) chunks.push(fixed.subarray(0, size));
        fixed = undefined;
        chunks.push(chunk);
      }
      size += chunk.length;
    };
    const onEnd = (): void => {
      cleanup();
      if (fixed !== undefined) resolve(fixed.subarray(0, size));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (e: Error): void => {
      cleanup();
      reject(new HttpError(400, 'bad_body', `the request body could not be read: ${e.message}`));
    };
    // 'close' before 'end': the client went away mid-body.
    const onClose = (): void => {
      if (req.complete) return;
      cleanup();
      reject(new HttpError(499, 'client_closed_request', 'the client closed the connection before sending the whole body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
