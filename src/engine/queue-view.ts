import type { QueuedRequestInfo, QueueView } from '../core/policy';
import type { Queueable, RequestQueue } from './request-queue';

/**
 * The {@link QueueView} a host hands its policy: refreshed before each decision, so it is only
 * valid during `decide()` (a policy that wants history keeps its own). One per host, reused,
 * because a decision happens per batch on the hot path.
 * @internal
 */
export class LiveQueueView implements QueueView {
  now = 0;
  queuedRows = 0;
  queuedRequests = 0;
  oldestEnqueuedAt = 0;
  inFlight = 0;
  freeSlots = 0;
  maxBatchSize = 1;
  maxDelayMs = 0;
  windowEndsAt = 0;
  preferredBatchSizes: readonly number[] | undefined = undefined;
  maxLatencyMs = Infinity;

  constructor(private readonly queue: RequestQueue<QueuedRequestInfo & Queueable>) {}

  earliestDeadline(): number {
    return this.queue.earliestDeadline();
  }

  requests(): Iterable<QueuedRequestInfo> {
    return this.queue.walk();
  }
}
