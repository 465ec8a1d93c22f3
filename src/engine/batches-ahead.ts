import type { ResolvedOptions } from '../core/options';
import { greedyPolicy } from '../core/policy';
import { runBatch } from './batch-run';
import type { PlainLane } from './plain-lane';
import { RequestBatch, type PendingRequest } from './request';
import type { RequestQueue } from './request-queue';
import type { Settlement } from './settlement';

/**
 * Whether a full batch may go to the executor ahead of a free slot: the executor holds batches
 * ahead (`Executor.batchesAhead`, here `batchesAhead`), every slot is busy, a full batch waits,
 * and the policy is the window policy without priority levels, which releases a full batch the
 * moment a slot frees anyway (so nothing but the time the model waited for the host changes).
 * Other policies plan with the slots they see, a later request of a higher level could have gone
 * first, and a host-side `batchTimeoutMs` would count the wait behind the running batch.
 * @internal
 */
export function mayGoAhead(o: ResolvedOptions, batchesAhead: number, inFlight: number, queuedRows: number, draining: boolean): boolean {
  if (inFlight < o.maxConcurrentBatches || o.priorities !== undefined || o.batchTimeoutMs !== Infinity || draining) return false;
  if (!(inFlight < o.maxConcurrentBatches + batchesAhead && queuedRows >= o.maxBatchSize)) return false;
  return o.policy === greedyPolicy || o.policy.goesAhead?.() === true;
}

/**
 * Sends full batches ahead while {@link mayGoAhead} allows (`allowed` re-reads the host's state),
 * from the plain lane or the queue, whichever holds the requests (never both: see `PlainLane`).
 * @internal
 */
export function sendAhead<In, Out>(s: Settlement<In, Out>, queue: RequestQueue<PendingRequest<In, Out>>, lane: PlainLane<In, Out>, maxBatchSize: number, allowed: () => boolean): void {
  while (allowed()) {
    if (lane.size > 0) {
      runBatch(s, lane.take(maxBatchSize), 'full', true);
      continue;
    }
    const batch = queue.take(maxBatchSize);
    if (batch.length === 0) return;
    runBatch(s, new RequestBatch(batch), 'full', true);
  }
}
