import { describe, toError } from '../core/describe';
import { AbortError, DeadlineExceededError, HostStoppedError } from '../core/errors';

// The errors a call is refused or settled with when it ends without a result of its own, for
// every host (the engine, the generation host), the response cache and the remote clients. Their
// messages say where the call was (queued, running, waiting for something) and whether its result
// is discarded: tests and users match on them, so they all live here, one function per refusal,
// the wording parametrized by what the call was waiting for. The failures of a host's start
// (its executor, its warm-up) and of a reload are here too.
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

/**
 * A call's time limit passed: `${host}: timed out after <elapsed> ms<where> (timeoutMs <limit>)<tail>`.
 * `shown` is the elapsed time as the message prints it (each caller rounds its own way).
 */
function timedOut(host: string, phase: 'queued' | 'running', elapsed: number, shown: string, limit: string, where: string, tail: string): DeadlineExceededError {
  return frameless(() => new DeadlineExceededError(`${host}: timed out after ${shown} ms${where} (timeoutMs ${limit})${tail}`, 'timeout', phase, elapsed));
}

/** An engine request timed out in the queue. */
export function timedOutQueued(host: string, elapsed: number, limit: number): DeadlineExceededError {
  return timedOut(host, 'queued', elapsed, fmt(elapsed), limitText(limit), ' in the queue', '; it never ran');
}

/** An engine request timed out while its batch ran. */
export function timedOutRunning(host: string, elapsed: number, limit: number): DeadlineExceededError {
  return timedOut(host, 'running', elapsed, fmt(elapsed), limitText(limit), '', ' while its batch was running; its result will be discarded');
}

/** A generated sequence timed out: waiting for a slot, or after `produced` tokens. */
export function sequenceTimedOut(host: string, elapsed: number, limit: number, produced: number | undefined): DeadlineExceededError {
  const shown = String(Math.round(elapsed));
  return produced === undefined
    ? timedOut(host, 'queued', elapsed, shown, String(limit), ' waiting for a slot', '; it never ran')
    : timedOut(host, 'running', elapsed, shown, String(limit), '', ` with ${produced} tokens generated; its slot is freed at the next step`);
}

/** A caller of the response cache timed out waiting for the computation it shares. */
export function sharedTimedOut(host: string, limit: number): DeadlineExceededError {
  return timedOut(host, 'queued', limit, String(limit), String(limit), '', ' waiting for its (shared) computation');
}

/** A remote client's call timed out waiting for `peer` (`'the host'`, `'a replica'`). */
export function remoteTimedOut(host: string, elapsed: number, limit: number, peer: string): DeadlineExceededError {
  return timedOut(host, 'running', elapsed, String(Math.round(elapsed)), String(limit), '', ` waiting for ${peer}; its answer will be discarded`);
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

/** A call was aborted: `${host}: <what>`. */
function aborted(host: string, what: string, reason: unknown): AbortError {
  return new AbortError(`${host}: ${what}`, reason);
}

/** An engine request was aborted in the queue. */
export function abortedQueued(host: string, reason: unknown): AbortError {
  return aborted(host, 'the request was aborted while queued; it never ran', reason);
}

/** An engine request was aborted while its batch ran. */
export function abortedRunning(host: string, reason: unknown): AbortError {
  return aborted(host, 'the request was aborted while its batch was running; its result will be discarded', reason);
}

/** A generated sequence was aborted: waiting for a slot, or after `produced` tokens. */
export function sequenceAborted(host: string, reason: unknown, produced: number | undefined): AbortError {
  return aborted(host, produced === undefined ? 'aborted while waiting for a slot' : `aborted after ${produced} tokens; its slot is freed at the next step`, reason);
}

/** A caller of the response cache was aborted waiting for the computation it shares. */
export function sharedAborted(host: string, reason: unknown): AbortError {
  return aborted(host, 'the request was aborted while waiting for its (shared) computation', reason);
}

/** A remote client's call was aborted `where` (`'while the host had it'`, `'while it waited for a replica'`). */
export function remoteAborted(host: string, reason: unknown, where: string): AbortError {
  return aborted(host, `the request was aborted ${where}; its answer will be discarded`, reason);
}

/**
 * A call whose signal had aborted before it was accepted. `where` names the call (`host` or
 * `host.generate`); `wording` says how: the engine's `'the request was aborted before it was
 * queued'`, the generation host's `'aborted before it was queued'`, the remote clients' `'the
 * request was aborted before it was sent'`.
 */
export function abortedBefore(where: string, reason: unknown, wording = 'the request was aborted before it was queued'): AbortError {
  return aborted(where, wording, reason);
}

/** A call refused by a stopped (or stopping) host; `accepts` adds the engine's "and accepts no new requests". */
export function hostStopped(where: string, accepts = false): HostStoppedError {
  return new HostStoppedError(`${where}: the host is stopped (or stopping)${accepts ? ' and accepts no new requests' : ''}`);
}

/** A call still waiting (or, for a sequence, running) when the host stopped without draining. */
export function stoppedBefore(host: string, what: 'request' | 'sequence'): HostStoppedError {
  return new HostStoppedError(
    what === 'request' ? `${host}: the host was stopped without draining before this request ran` : `${host}: the host was stopped before this sequence finished`,
  );
}

/** A request with no rows, or more than one batch holds. */
export function tooManyRows(host: string, maxBatchSize: number, rows: unknown): RangeError {
  return new RangeError(`${host}: a request must have from 1 to maxBatchSize (${maxBatchSize}) rows; this one has ${describe(rows)}. Split it, or raise maxBatchSize.`);
}

/** A queued request that no longer fits after `configure()` lowered `maxBatchSize`. */
export function loweredBelow(host: string, maxBatchSize: number, rows: number): RangeError {
  return new RangeError(`${host}: maxBatchSize was lowered to ${maxBatchSize}, below this request's ${rows} rows`);
}

/** A reload's new model failed to start or warm up (`thrown`), so the current one keeps serving. */
export function reloadFailed(where: string, thrown: unknown): Error {
  return new Error(`${where}: the new model could not be started, so the current one keeps serving: ${toError(thrown, "The new executor's start").message}`, { cause: thrown });
}

/** The host stopped while a reload's new model was starting (the new model is discarded). */
export function stoppedDuringReload(where: string): HostStoppedError {
  return new HostStoppedError(`${where}: the host was stopped while the new model started`);
}

/** A warm-up batch failed: the host does not start. */
export function warmupFailed(host: string, size: number, bad: Error): Error {
  return new Error(`${host}: the warm-up batch of ${size} failed, so the host does not start: ${bad.message}`, { cause: bad });
}

/** The generation host's step executor failed to start: what every waiting sequence ends with. */
export function stepExecutorFailed(host: string, thrown: unknown): Error {
  return new Error(`${host}: the step function's executor failed to start: ${toError(thrown, 'start').message}`, { cause: thrown });
}

/** `stop()` was given a `drain` that is not a boolean. */
export function badDrain(host: string, drain: unknown): TypeError {
  return new TypeError(`${host}.stop: expected \`drain\` to be a boolean, got ${describe(drain)}`);
}

/** A limit recovered as deadline − enqueuedAt, without float noise (30.000000000000455 → "30"). */
function limitText(ms: number): string {
  return String(Math.round(ms * 1e6) / 1e6);
}

function fmt(ms: number): string {
  return Number.isInteger(ms) ? String(ms) : ms.toFixed(1);
}
