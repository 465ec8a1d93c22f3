import { isError } from '../../core/describe';
import {
  AbortError,
  BatchSizeMismatchError,
  DeadlineExceededError,
  DeliveryLimitError,
  HostStoppedError,
  MicrobatchError,
  QueueFullError,
} from '../../core/errors';
import { WorkerCrashedError, WorkerStartError } from './errors';

/**
 * An error as it crosses a thread or a socket: plain data, so structured clone and JSON both keep
 * every field (structured clone alone drops custom names such as `QueueFullError` and every extra
 * property such as `code` or `expected`).
 * @internal
 */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  /** Own enumerable properties with JSON-safe values (`code`, `reason`, `expected`...). */
  readonly props?: Record<string, unknown>;
  readonly cause?: WireError | { readonly value: unknown };
}

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Classes re-created by name on the receiving side, so that `instanceof QueueFullError` holds for
 * an error raised by a host in another thread or process. Anything else arrives as an `Error`
 * carrying the original `name`.
 */
const KNOWN: ReadonlyMap<string, ErrorClass> = new Map<string, ErrorClass>([
  ['Error', Error],
  ['TypeError', TypeError],
  ['RangeError', RangeError],
  ['SyntaxError', SyntaxError],
  ['ReferenceError', ReferenceError],
  ['EvalError', EvalError],
  ['URIError', URIError],
  ['MicrobatchError', MicrobatchError],
  ['QueueFullError', QueueFullError],
  ['DeadlineExceededError', DeadlineExceededError],
  ['AbortError', AbortError],
  ['HostStoppedError', HostStoppedError],
  ['BatchSizeMismatchError', BatchSizeMismatchError],
  ['DeliveryLimitError', DeliveryLimitError],
  ['WorkerCrashedError', WorkerCrashedError],
  ['WorkerStartError', WorkerStartError],
]);

/** Causes nest; a bound keeps a cyclic or absurdly deep chain from looping. */
const MAX_CAUSE_DEPTH = 4;

function jsonSafe(value: unknown): boolean {
  const t = typeof value;
  return value === null || t === 'string' || t === 'number' || t === 'boolean';
}

/**
 * Turns a thrown value into {@link WireError} data. Non-Error values become an `Error` whose
 * message describes them.
 * @internal
 */
export function serializeError(thrown: unknown, depth = 0): WireError {
  if (!isError(thrown)) {
    return { name: 'Error', message: `a non-Error value was thrown: ${safeString(thrown)}`, ...(jsonSafe(thrown) ? { cause: { value: thrown } } : {}) };
  }
  const e = thrown as Error & Record<string, unknown>;
  const props: Record<string, unknown> = {};
  let any = false;
  for (const key of Object.keys(e)) {
    if (key === 'name' || key === 'message' || key === 'stack' || key === 'cause') continue;
    const v = e[key];
    if (jsonSafe(v) || (Array.isArray(v) && v.every(jsonSafe))) {
      props[key] = v;
      any = true;
    }
  }
  let cause: WireError['cause'];
  if (e.cause !== undefined && depth < MAX_CAUSE_DEPTH) {
    cause = isError(e.cause) ? serializeError(e.cause, depth + 1) : jsonSafe(e.cause) ? { value: e.cause } : undefined;
  }
  return {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : safeString(e.message),
    ...(typeof e.stack === 'string' ? { stack: e.stack } : {}),
    ...(any ? { props } : {}),
    ...(cause !== undefined ? { cause } : {}),
  };
}

/**
 * Re-creates an Error from {@link WireError} data: the same class when the name is one of
 * microbatch's errors or a built-in one, else an `Error` with the original `name`; message, stack
 * (the remote one: it says where the error was thrown) and extra properties are restored.
 * @internal
 */
export function reviveError(wire: WireError): Error {
  const Ctor = KNOWN.get(wire.name) ?? Error;
  // Reflect.construct(Error, ...) gives a real error object (with the internal error slot that
  // `Object.prototype.toString` and util.inspect look at) whose prototype is the target class,
  // without running that class's constructor, whose parameters differ from class to class.
  const error = Reflect.construct(Error, [wire.message], Ctor as unknown as new () => Error) as Error & Record<string, unknown>;
  define(error, 'name', wire.name);
  if (wire.stack !== undefined) define(error, 'stack', wire.stack);
  if (wire.props !== undefined) for (const [k, v] of Object.entries(wire.props)) error[k] = v;
  if (wire.cause !== undefined) define(error, 'cause', 'value' in wire.cause && !('message' in wire.cause) ? wire.cause.value : reviveError(wire.cause as WireError));
  return error;
}

function define(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: false });
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'string' ? JSON.stringify(value) : String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
