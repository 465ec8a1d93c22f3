import { isError } from '../core/describe';
import { AbortError, DeadlineExceededError, HostStoppedError, QueueFullError } from '../core/errors';
import { TensorInputError } from '../batchers/tensor-input-error';

/**
 * An error with the HTTP answer it deserves: status, a stable machine-readable `code`, a message
 * that names the problem, and extra headers (`Retry-After`, `Allow`). The server answers every
 * failure with the Open Inference Protocol's error object, `{ "error": "<message>" }`, with the
 * code beside it: `{ "error": "<message>", "code": "<code>" }`.
 *
 * @example
 * ```ts
 * throw new HttpError(400, 'unknown_input', 'input "Z" is not an input of model "linear"; its inputs are "X"');
 * ```
 */
export class HttpError extends Error {
  /** The HTTP status code. */
  readonly status: number;
  /** A short, stable identifier clients can switch on, e.g. `'queue_full'`. */
  readonly code: string;
  /** Headers to send with the answer. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** Shorthand for a 400 (the client sent something the model cannot take). @internal */
export function badRequest(code: string, message: string): HttpError {
  return new HttpError(400, code, message);
}

/**
 * Maps what an inference rejected with to an HTTP answer:
 *
 * | error | status | code |
 * | --- | --- | --- |
 * | `QueueFullError` | 503 + `Retry-After` | `queue_full` |
 * | `DeadlineExceededError`, reason `'shed'` | 503 + `Retry-After` | `shed` |
 * | `DeadlineExceededError`, `'timeout'` / `'batch-timeout'` | 504 | `deadline_exceeded` |
 * | `HostStoppedError` | 503 | `model_stopped` |
 * | `AbortError` (the client went away) | 499 | `client_closed_request` |
 * | `TensorInputError` (the batcher refused the tensors) | 400 | `invalid_input` |
 * | anything else (the model threw) | 500 | `model_error` |
 *
 * @param error - what `host.inference()` rejected with.
 * @param retryAfterSeconds - the `Retry-After` value for the 503s that are worth retrying.
 */
export function toHttpError(error: unknown, retryAfterSeconds: number): HttpError {
  if (error instanceof HttpError) return error;
  const retry = { 'Retry-After': String(retryAfterSeconds) };
  const message = isError(error) ? error.message : String(error);
  if (error instanceof QueueFullError) return new HttpError(503, 'queue_full', message, retry, { cause: error });
  if (error instanceof DeadlineExceededError) {
    if (error.reason === 'shed') return new HttpError(503, 'shed', message, retry, { cause: error });
    return new HttpError(504, 'deadline_exceeded', message, {}, { cause: error });
  }
  if (error instanceof HostStoppedError) return new HttpError(503, 'model_stopped', message, retry, { cause: error });
  // 499 is nginx's "client closed request": nobody reads it, but logs and metrics should not call it a 5xx.
  if (error instanceof AbortError) return new HttpError(499, 'client_closed_request', message, {}, { cause: error });
  if (error instanceof TensorInputError) return new HttpError(400, 'invalid_input', message, {}, { cause: error });
  return new HttpError(500, 'model_error', `the model failed: ${message}`, {}, { cause: error });
}
