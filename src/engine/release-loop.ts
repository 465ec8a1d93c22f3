import type { ResolvedOptions } from '../core/options';
import { runBatch } from './batch-run';
import { sendAhead } from './batches-ahead';
import type { PlainLane } from './plain-lane';
import type { LiveQueueView } from './queue-view';
import { RequestBatch, type PendingRequest } from './request';
import type { RequestQueue } from './request-queue';
import type { Settlement } from './settlement';
import type { WakeTimer } from './wake-timer';

/**
 * One flush of a ready host: while requests wait and a slot is free, asks the release policy
 * (through `view`) and runs what it releases, sheds what it sheds, or arms `wake` for the time it
 * names; then hands full batches ahead to an executor that holds them while `canGoAhead` allows.
 * Runs once per batch, not per request.
 * @internal
 */
export function releaseBatches<In, Out>(o: ResolvedOptions, s: Settlement<In, Out>, queue: RequestQueue<PendingRequest<In, Out>>, lane: PlainLane<In, Out>, view: LiveQueueView, wake: WakeTimer, draining: boolean, canGoAhead: () => boolean): void {
  while (queue.size + lane.size > 0 && s.inFlight < o.maxConcurrentBatches) {
    const decision = view.decide(o, lane, s.inFlight, draining);
    if (decision.shed !== undefined && decision.shed.length > 0) s.shed(decision.shed);
    if (!decision.release) {
      if (decision.wakeAt !== undefined) wake.set(decision.wakeAt);
      return;
    }
    const maxRows = Math.max(1, Math.min(decision.maxRows, o.maxBatchSize));
    wake.clear();
    if (lane.size > 0) {
      runBatch(s, lane.take(maxRows), decision.reason);
      continue;
    }
    let batch = queue.take(maxRows);
    // A policy that allows fewer rows than the head request carries must not stall the queue.
    if (batch.length === 0) batch = queue.take(o.maxBatchSize);
    if (batch.length === 0) return; // everything waiting was just shed
    runBatch(s, new RequestBatch(batch), decision.reason);
  }
  sendAhead(s, queue, lane, o.maxBatchSize, canGoAhead);
}
