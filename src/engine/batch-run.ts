import { systemClock } from '../core/clock';
import { batchEnded, batchStarted } from './loop-watch';
import type { TimerHandle } from '../core/clock';
import { toError } from '../core/describe';
import type { RequestOutcome } from '../core/observer';
import type { ResolvedOptions } from '../core/options';
import type { ReleaseReason } from '../core/policy';
import { runPipeline, type PipelineConfig } from './pipeline';
import type { Reporter } from './reporting';
import { batchTimedOut } from './settle-errors';

const EMPTY: readonly unknown[] = Object.freeze([]);

/** A batch that held the event loop this long defers the host's next decision past the timers phase. */
const BLOCKED_LOOP_MS = 1;

/**
 * A batch the host released, whatever queued it: request objects (`RequestBatch`) or the plain
 * lane (`LaneBatch`). Read per batch, and per request only for reports.
 * @internal
 */
export interface ReleasedBatch<In> {
  /** Requests in it. */
  readonly length: number;
  /** Their rows (valid after `start`). */
  readonly rows: number;
  /** Marks the requests running from `startedAt`; returns their items, in order. */
  start(startedAt: number): readonly In[];
  /** When request `i` was queued (clock ms). */
  enqueuedAt(i: number): number;
  /** What the observer's `captureContext` returned for request `i`. */
  context(i: number): unknown;
}

/** What a batch run needs from its host: its current options and the ways to settle. @internal */
export interface BatchRunHost<In, Out, B extends ReleasedBatch<In>> {
  readonly options: ResolvedOptions;
  readonly pipeline: PipelineConfig<In, Out, unknown, unknown>;
  readonly reporter: Reporter;
  /** Requests still queued, for the batch event. */
  queued(): number;
  /** Settles each request with its own result; returns how many got a value. One call per batch. */
  settle(batch: B, results: ReadonlyArray<Out | Error>): number;
  /** Rejects request `i` of the batch (unless it is settled already). */
  rejectAt(batch: B, i: number, error: Error, outcome: Exclude<RequestOutcome, 'ok' | 'queue-full'>): void;
  /** The batch takes a slot and counts in the stats; returns what `finished` hands back. */
  started(requests: number, rows: number): unknown;
  /**
   * The batch is over (answered, or given up on by `batchTimeoutMs`): free its slot. `blockedLoop`
   * says the event loop did not get through a turn while it ran (see {@link runBatch}).
   */
  finished(requests: number, blockedLoop: boolean, token: unknown): void;
}

/**
 * Runs one released batch: marks its requests running, runs the pipeline, settles every request
 * with its own result, feeds the policy and the observer, and frees the slot. With
 * `batchTimeoutMs`, a batch that runs too long is given up on: its requests reject, its slot is
 * freed, and its late result is discarded.
 * @internal
 */
export function runBatch<In, Out, B extends ReleasedBatch<In>>(host: BatchRunHost<In, Out, B>, batch: B, reason: ReleaseReason): void {
  const o = host.options;
  const startedAt = o.clock.now();
  const items = batch.start(startedAt);
  const rows = batch.rows;
  const token = host.started(batch.length, rows);

  let finished = false;
  let batchTimer: TimerHandle | undefined;
  // Did the batch hold the event loop? onnxruntime-node runs the model in a setImmediate callback
  // and resolves from it, so its block is not inside the batch function's call. On the real clock
  // the test is "the batch took 1 ms or more, the loop went as long without reaching a check phase,
  // and it has not idled since the batch started" (loop-watch.ts). A loop that keeps turning (a worker executor's main thread) is not taken for
  // a blocked one. An injected clock has no loop to ask: there, a batch blocks when the clock moved
  // during its synchronous start.
  const real = o.clock === systemClock;
  let syncMs = 0;
  let idleAt = 0;
  const finish = (): void => {
    finished = true;
    if (batchTimer !== undefined) o.clock.clearTimer(batchTimer);
    const blocked = real ? batchEnded(BLOCKED_LOOP_MS, startedAt, o.clock.now(), idleAt) : syncMs >= BLOCKED_LOOP_MS;
    host.finished(batch.length, blocked, token);
  };
  if (o.batchTimeoutMs !== Infinity) {
    batchTimer = o.clock.setTimer(() => {
      if (finished) return;
      const elapsed = o.clock.now() - startedAt;
      const now = o.clock.now();
      for (let i = 0; i < batch.length; i++) host.rejectAt(batch, i, batchTimedOut(o.name, o.batchTimeoutMs, now - batch.enqueuedAt(i)), 'timeout');
      o.policy.observe?.({ rows, requests: batch.length, runMs: elapsed, ok: false });
      finish();
    }, o.batchTimeoutMs);
  }

  const reporter = host.reporter;
  // Timings cost clock reads per batch: take them only when someone reads them.
  const reportBatch = reporter.batches;
  const timed = reportBatch || o.policy.observe !== undefined;
  if (real) idleAt = batchStarted();
  const running = runPipeline(host.pipeline, items, timed);
  if (!real) syncMs = o.clock.now() - startedAt;
  running.then(
    (result) => {
      if (finished) return;
      // Read before settling: settling clears each request's context.
      const contexts = reporter.captures ? Array.from({ length: batch.length }, (_, i) => batch.context(i)) : EMPTY;
      const succeeded = host.settle(batch, result.results);
      o.policy.observe?.({ rows, requests: batch.length, runMs: result.runMs, ok: result.modelCalls > 0 });
      if (reportBatch) {
        let waitSum = 0;
        let oldest = Infinity;
        for (let i = 0; i < batch.length; i++) {
          const at = batch.enqueuedAt(i);
          waitSum += startedAt - at;
          if (at < oldest) oldest = at;
        }
        reporter.batch({
          host: o.name,
          rows,
          requests: batch.length,
          reason,
          queueWaitOldestMs: startedAt - oldest,
          queueWaitMeanMs: waitSum / batch.length,
          mergeMs: result.mergeMs,
          runMs: result.runMs,
          splitMs: result.splitMs,
          modelCalls: result.modelCalls,
          paddingWaste: result.padding,
          succeeded,
          failed: batch.length - succeeded,
          queued: host.queued(),
          startedAt,
          contexts,
        });
      }
      finish();
    },
    // runPipeline turns every failure into per-item errors; this is a last line of defence.
    (e: unknown) => {
      if (finished) return;
      const error = toError(e, 'microbatch');
      for (let i = 0; i < batch.length; i++) host.rejectAt(batch, i, error, 'error');
      finish();
    },
  );
}
