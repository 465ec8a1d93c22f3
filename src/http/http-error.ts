import { toServingError, type ServingErrorCode } from '../serving';

/**
 * An error with the HTTP answer it deserves: status, a stable machine-readable `code`, a message
 * that names the problem, and extra headers (`Retry-After`, `Allow`). The serving core's
 * `ServingError`s become one through {@link toHttpError}. The server answers every
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

/** The HTTP status of each {@link ServingErrorCode}. */
export const HTTP_STATUS: Readonly<Record<ServingErrorCode, number>> = {
  'invalid-argument': 400,
  'not-found': 404,
  // 499 is nginx's "client closed request": nobody reads it, but logs and metrics should not call it a 5xx.
  cancelled: 499,
  'resource-exhausted': 413,
  internal: 500,
  unimplemented: 501,
  unavailable: 503,
  'deadline-exceeded': 504,
};

/**
 * Maps what an inference rejected with to an HTTP answer, through the serving core's codes
 * ({@link toServingError}, then {@link HTTP_STATUS}); a retryable failure carries `Retry-After`:
 *
 * | error | status | code |
 * | --- | --- | --- |
 * | `QueueFullError` | 503 + `Retry-After` | `queue_full` |
 * | `DeadlineExceededError`, reason `'shed'` | 503 + `Retry-After` | `shed` |
 * | `DeadlineExceededError`, `'timeout'` / `'batch-timeout'` | 504 | `deadline_exceeded` |
 * | `HostStoppedError` | 503 + `Retry-After` | `model_stopped` |
 * | `AbortError` (the client went away) | 499 | `client_closed_request` |
 * | `TensorInputError` (the batcher refused the tensors) | 400 | `invalid_input` |
 * | a `ServingError` | its code's status | its `reason` |
 * | anything else (the model threw) | 500 | `model_error` |
 *
 * @param error - what `host.inference()` rejected with.
 * @param retryAfterSeconds - the `Retry-After` value for the 503s that are worth retrying.
 *
 * @example
 * ```ts
 * const answer = toHttpError(new QueueFullError('full'), 1); // 503 queue_full, Retry-After: 1
 * ```
 */
export function toHttpError(error: unknown, retryAfterSeconds: number): HttpError {
  if (error instanceof HttpError) return error;
  const e = toServingError(error);
  const headers: Record<string, string> = e.retry ? { 'Retry-After': String(retryAfterSeconds) } : {};
  return new HttpError(HTTP_STATUS[e.code], e.reason, e.message, headers, e.cause === undefined ? undefined : { cause: e.cause });
}
