import { AbortError, DeadlineExceededError } from '../core/errors';

// The errors a host settles requests with when they end without a result of their own. Their
// messages say where the request was (queued or running) and whether its result is discarded:
// tests and users match on them, so they live in one place.

export function timedOutQueued(host: string, elapsed: number, limit: number): DeadlineExceededError {
  return new DeadlineExceededError(`${host}: timed out after ${fmt(elapsed)} ms in the queue (timeoutMs ${limitText(limit)}); it never ran`, 'timeout', 'queued', elapsed);
}

export function timedOutRunning(host: string, elapsed: number, limit: number): DeadlineExceededError {
  return new DeadlineExceededError(
    `${host}: timed out after ${fmt(elapsed)} ms (timeoutMs ${limitText(limit)}) while its batch was running; its result will be discarded`,
    'timeout',
    'running',
    elapsed,
  );
}

export function batchTimedOut(host: string, batchTimeoutMs: number, elapsed: number): DeadlineExceededError {
  return new DeadlineExceededError(
    `${host}: the batch this request was in ran longer than batchTimeoutMs (${batchTimeoutMs} ms); its result will be discarded`,
    'batch-timeout',
    'running',
    elapsed,
  );
}

export function shedByPrediction(host: string, waited: number, policy: string): DeadlineExceededError {
  return new DeadlineExceededError(
    `${host}: shed by prediction after ${fmt(waited)} ms in the queue: the '${policy}' policy predicted ` +
      'it could not finish within its latency budget (maxLatencyMs or timeoutMs); it never ran',
    'shed',
    'queued',
    waited,
  );
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
