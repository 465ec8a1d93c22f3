import { systemClock } from '../core/clock';
import { batchEnded, batchStarted } from './loop-watch';
import type { TimerHandle } from '../core/clock';
import { toError } from '../core/describe';
import type { ReleaseReason } from '../core/policy';
import { runPipeline } from './pipeline';
import { batchTimedOut } from './settle-errors';
import type { Settlement } from './settlement';

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

/**
 * Runs one released batch: marks its requests running, runs the pipeline, settles every request
 * with its own result, feeds the policy and the observer, and frees the slot. With
 * `batchTimeoutMs`, a batch that runs too long is given up on: its requests reject, its slot is
 * freed, and its late result is discarded. It hears nothing of the host: `settlement` is the host's
 * {@link Settlement} (its slots, counters and the ways to settle).
 * @internal
 */
export function runBatch<In, Out>(settlement: Settlement<In, Out>, batch: ReleasedBatch<In>, reason: ReleaseReason, ahead = false): void {
  const o = settlement.options;
  const startedAt = o.clock.now();
  // Sent ahead of a free slot, the batch waits in its executor first: that wait is not the model's.
  const aheadStart = ahead ? settlement.waitAhead() : undefined;
  const items = batch.start(startedAt);
  const rows = batch.rows;
  const token = settlement.started(batch.length, rows);

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
    settlement.finished(batch.length, blocked, token);
  };
  if (o.batchTimeoutMs !== Infinity) {
    batchTimer = o.clock.setTimer(() => {
      if (finished) return;
      const elapsed = o.clock.now() - startedAt;
      const now = o.clock.now();
      for (let i = 0; i < batch.length; i++) settlement.rejectAt(batch, i, batchTimedOut(o.name, o.batchTimeoutMs, now - batch.enqueuedAt(i)), 'timeout');
      o.policy.observe?.({ rows, requests: batch.length, runMs: elapsed, ok: false });
      finish();
    }, o.batchTimeoutMs);
  }

  const reporter = settlement.reporter;
  // Timings cost clock reads per batch: take them only when someone reads them.
  const reportBatch = reporter.batches;
  const timed = reportBatch || o.policy.observe !== undefined;
  if (real) idleAt = batchStarted();
  const running = runPipeline(settlement.pipeline, items, timed);
  if (!real) syncMs = o.clock.now() - startedAt;
  running.then(
    (result) => {
      if (finished) return;
      // Read before settling: settling clears each request's context.
      const contexts = reporter.captures ? Array.from({ length: batch.length }, (_, i) => batch.context(i)) : EMPTY;
      const succeeded = settlement.settle(batch, result.results);
      const waitedMs = aheadStart === undefined || Number.isNaN(aheadStart.at) ? 0 : Math.max(0, aheadStart.at - startedAt - result.mergeMs);
      const runMs = Math.max(0, result.runMs - waitedMs);
      o.policy.observe?.({ rows, requests: batch.length, runMs, ok: result.modelCalls > 0 });
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
          runMs,
          splitMs: result.splitMs,
          modelCalls: result.modelCalls,
          paddingWaste: result.padding,
          succeeded,
          failed: batch.length - succeeded,
          queued: settlement.queued(),
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
      for (let i = 0; i < batch.length; i++) settlement.rejectAt(batch, i, error, 'error');
      finish();
    },
  );
}
