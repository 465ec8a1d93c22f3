import { isError } from '../core/describe';
import { AbortError, DeadlineExceededError, HostStoppedError, QueueFullError } from '../core/errors';
import { TensorInputError } from '../batchers/tensor-input-error';

/**
 * What went wrong with a request, in words every transport can map to its own status. The HTTP
 * transport answers the status in the table; a gRPC transport answers the gRPC status.
 *
 * | code | HTTP | gRPC |
 * | --- | --- | --- |
 * | `'invalid-argument'` | 400 | `INVALID_ARGUMENT` |
 * | `'not-found'` | 404 | `NOT_FOUND` |
 * | `'cancelled'` | 499 | `CANCELLED` |
 * | `'resource-exhausted'` | 413 | `RESOURCE_EXHAUSTED` |
 * | `'internal'` | 500 | `INTERNAL` |
 * | `'unimplemented'` | 501 | `UNIMPLEMENTED` |
 * | `'unavailable'` | 503 | `UNAVAILABLE` |
 * | `'deadline-exceeded'` | 504 | `DEADLINE_EXCEEDED` |
 */
export type ServingErrorCode = 'invalid-argument' | 'not-found' | 'cancelled' | 'resource-exhausted' | 'internal' | 'unimplemented' | 'unavailable' | 'deadline-exceeded';

/**
 * A request's failure as the serving core reports it: a {@link ServingErrorCode} that each
 * transport maps to its own status, a `reason` clients can switch on (`'queue_full'`,
 * `'unknown_input'`...: the HTTP answer's `code` field), a message that names the problem, and
 * whether retrying later may succeed (HTTP sends `Retry-After` then).
 *
 * @example
 * ```ts
 * throw new ServingError('invalid-argument', 'unknown_input', 'input "Z" is not an input of model "linear"; its inputs are "X"');
 * ```
 */
export class ServingError extends Error {
  /** The protocol-neutral code. */
  readonly code: ServingErrorCode;
  /** A short, stable identifier clients can switch on, e.g. `'queue_full'`. */
  readonly reason: string;
  /**
   * Whether the same request may succeed later (a full queue, a model still loading).
   * @default false
   */
  readonly retry: boolean;

  constructor(code: ServingErrorCode, reason: string, message: string, options?: ErrorOptions & { retry?: boolean }) {
    super(message, options);
    this.name = 'ServingError';
    this.code = code;
    this.reason = reason;
    this.retry = options?.retry ?? false;
  }
}

/**
 * Shorthand for an `'invalid-argument'` error (the client sent something the model cannot take).
 * @internal
 */
export function invalidArgument(reason: string, message: string): ServingError {
  return new ServingError('invalid-argument', reason, message);
}

/** The `'unavailable'` answer to a call that arrives while its server or serving core closes. @internal */
export function shuttingDown(): ServingError {
  return new ServingError('unavailable', 'shutting_down', 'the server is shutting down and takes no new requests', { retry: true });
}

/**
 * Maps what a request failed with to a {@link ServingError} (one that is already one is kept):
 *
 * | error | code | reason | retry |
 * | --- | --- | --- | --- |
 * | `QueueFullError` | `'unavailable'` | `queue_full` | yes |
 * | `DeadlineExceededError`, reason `'shed'` | `'unavailable'` | `shed` | yes |
 * | `DeadlineExceededError`, `'timeout'` / `'batch-timeout'` | `'deadline-exceeded'` | `deadline_exceeded` | no |
 * | `HostStoppedError` | `'unavailable'` | `model_stopped` | yes |
 * | `AbortError` (the client went away) | `'cancelled'` | `client_closed_request` | no |
 * | `TensorInputError` (the batcher refused the tensors) | `'invalid-argument'` | `invalid_input` | no |
 * | anything else (the model threw) | `'internal'` | `model_error` | no |
 *
 * @param error - what `inference()` or a token stream rejected with.
 *
 * @example
 * ```ts
 * const failure = toServingError(await host.inference(feeds).catch((e: unknown) => e));
 * ```
 */
export function toServingError(error: unknown): ServingError {
  if (error instanceof ServingError) return error;
  const message = isError(error) ? error.message : String(error);
  const cause = { cause: error };
  if (error instanceof QueueFullError) return new ServingError('unavailable', 'queue_full', message, { ...cause, retry: true });
  if (error instanceof DeadlineExceededError) {
    if (error.reason === 'shed') return new ServingError('unavailable', 'shed', message, { ...cause, retry: true });
    return new ServingError('deadline-exceeded', 'deadline_exceeded', message, cause);
  }
  if (error instanceof HostStoppedError) return new ServingError('unavailable', 'model_stopped', message, { ...cause, retry: true });
  if (error instanceof AbortError) return new ServingError('cancelled', 'client_closed_request', message, cause);
  if (error instanceof TensorInputError) return new ServingError('invalid-argument', 'invalid_input', message, cause);
  return new ServingError('internal', 'model_error', `the model failed: ${message}`, cause);
}

/**
 * How much a failure matters in a server's log, by its code: a client's mistake (a bad request, an
 * unknown model, a client that left, too large) at `'debug'`, a refusal (full, stopped, past its
 * deadline) at `'warn'`, a model's failure at `'error'`. Every transport logs the same failure at
 * the same level.
 * @internal
 */
export function logLevelOf(code: ServingErrorCode): 'debug' | 'warn' | 'error' {
  switch (code) {
    case 'invalid-argument':
    case 'not-found':
    case 'cancelled':
    case 'resource-exhausted':
      return 'debug';
    case 'internal':
      return 'error';
    default:
      return 'warn';
  }
}
