import { toServingError, type ServingErrorCode } from '../serving';

/**
 * The gRPC status code of each {@link ServingErrorCode} (gRPC's standard numbering, the values of
 * `@grpc/grpc-js`'s `status` enum): the same failure answers the same way over REST and gRPC.
 *
 * | serving code | gRPC status |
 * | --- | --- |
 * | `'invalid-argument'` | 3 `INVALID_ARGUMENT` |
 * | `'not-found'` | 5 `NOT_FOUND` |
 * | `'cancelled'` | 1 `CANCELLED` |
 * | `'resource-exhausted'` | 8 `RESOURCE_EXHAUSTED` |
 * | `'internal'` | 13 `INTERNAL` |
 * | `'unimplemented'` | 12 `UNIMPLEMENTED` |
 * | `'unavailable'` | 14 `UNAVAILABLE` |
 * | `'deadline-exceeded'` | 4 `DEADLINE_EXCEEDED` |
 *
 * @example
 * ```ts
 * import { GRPC_STATUS } from 'microbatch/grpc';
 * GRPC_STATUS['not-found']; // 5
 * ```
 */
export const GRPC_STATUS: Readonly<Record<ServingErrorCode, number>> = {
  cancelled: 1,
  'invalid-argument': 3,
  'deadline-exceeded': 4,
  'not-found': 5,
  'resource-exhausted': 8,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
};

const NAMES: Readonly<Record<ServingErrorCode, string>> = {
  cancelled: 'CANCELLED',
  'invalid-argument': 'INVALID_ARGUMENT',
  'deadline-exceeded': 'DEADLINE_EXCEEDED',
  'not-found': 'NOT_FOUND',
  'resource-exhausted': 'RESOURCE_EXHAUSTED',
  unimplemented: 'UNIMPLEMENTED',
  internal: 'INTERNAL',
  unavailable: 'UNAVAILABLE',
};

/**
 * The trailing-metadata key that carries a failure's stable reason (`queue_full`,
 * `unknown_input`...): what REST answers in its `code` field.
 *
 * @example
 * ```ts
 * import type { ServiceError } from '@grpc/grpc-js';
 * import { REASON_KEY } from 'microbatch/grpc';
 * const reasonOf = (error: ServiceError): string => String(error.metadata.get(REASON_KEY)[0] ?? '');
 * ```
 */
export const REASON_KEY = 'microbatch-error-code';

/** A failure as a gRPC handler reports it: status, message (REST's `error`), reason, and the log fields. @internal */
export interface GrpcFailure {
  readonly code: number;
  /** The status's name, for log lines: `'NOT_FOUND'`. */
  readonly statusName: string;
  readonly details: string;
  readonly reason: string;
  readonly servingCode: ServingErrorCode;
}

/** What a call failed with, as a gRPC status (through the serving core's codes, as REST maps them). @internal */
export function toGrpcFailure(error: unknown): GrpcFailure {
  const e = toServingError(error);
  return { code: GRPC_STATUS[e.code], statusName: NAMES[e.code], details: e.message, reason: e.reason, servingCode: e.code };
}
