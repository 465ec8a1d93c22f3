import { AbortError, DeadlineExceededError } from '../core/errors';

// The errors a host settles requests with when they end without a result of their own. Their
// messages say where the request was (queued or running) and whether its result is discarded:
// tests and users match on them, so they live in one place.
//
// Time-outs and sheds are made by the host's own loop (a timer, a release decision), where the
// stack holds only microbatch's frames and never the caller's, so they are made without frames:
// capturing them cost 2-6 us an error, which under overload, where thousands are shed a second,
// is capacity taken from the model exactly when it is short: a shed request, from `inference()`
// to the caller's `catch`, took 6.0-6.3 us with frames and 2.4-2.5 without (the bench's MLP at
// 95% load shed up to 16,000 requests in a 2 s run). Aborts keep theirs: they are made on the
// stack of `abort()`, which may be the caller's.

/** Makes an error without capturing stack frames (its `stack` is its name and message). */
function frameless<E extends Error>(make: () => E): E {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export function timedOutQueued(host: string, elapsed: number, limit: number): DeadlineExceededError {
  return frameless(() => new DeadlineExceededError(`${host}: timed out after ${fmt(elapsed)} ms in the queue (timeoutMs ${limitText(limit)}); it never ran`, 'timeout', 'queued', elapsed));
}

export function timedOutRunning(host: string, elapsed: number, limit: number): DeadlineExceededError {
  return frameless(() => new DeadlineExceededError(
    `${host}: timed out after ${fmt(elapsed)} ms (timeoutMs ${limitText(limit)}) while its batch was running; its result will be discarded`,
    'timeout',
    'running',
    elapsed,
  ));
}

export function batchTimedOut(host: string, batchTimeoutMs: number, elapsed: number): DeadlineExceededError {
  return frameless(() => new DeadlineExceededError(
    `${host}: the batch this request was in ran longer than batchTimeoutMs (${batchTimeoutMs} ms); its result will be discarded`,
    'batch-timeout',
    'running',
    elapsed,
  ));
}

export function shedByPrediction(host: string, waited: number, policy: string): DeadlineExceededError {
  return frameless(() => new DeadlineExceededError(
    `${host}: shed by prediction after ${fmt(waited)} ms in the queue: the '${policy}' policy predicted ` +
      'it could not finish within its latency budget (maxLatencyMs or timeoutMs); it never ran',
    'shed',
    'queued',
    waited,
  ));
}

export function abortedQueued(host: string, reason: unknown): AbortError {
  return new AbortError(`${host}: the request was aborted while queued; it never ran`, reason);
}

export function abortedRunning(host: string, reason: unknown): AbortError {
  return new AbortError(`${host}: the request was aborted while its batch was running; its result will be discarded`, reason);
}

/** A limit recovered as deadline − enqueuedAt, without float noise (30.000000000000455 → "30"). */
function limitText(ms: number): string {
  return String(Math.round(ms * 1e6) / 1e6);
}

function fmt(ms: number): string {
  return Number.isInteger(ms) ? String(ms) : ms.toFixed(1);
}
