import { toError } from '../core/describe';
import type { ResolvedOptions } from '../core/options';
import { greedyPolicy, type QueuedRequestInfo, type QueueView, type ReleaseDecision, type ReleaseReason } from '../core/policy';
import type { Queueable, RequestQueue } from './request-queue';

// Once per process: a policy that throws per decision would otherwise flood stderr.
let warnedPolicy = false;

/**
 * The {@link QueueView} a host hands its policy, and the host's release decision: refreshed
 * before each decision, so it is only valid during `decide()` (a policy that wants history keeps
 * its own). One per host, reused, because a decision happens per batch on the hot path.
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

  /**
   * The host's release decision with `lane` (the plain lane) and `inFlight` batches running: drain
   * while stopping, greedy's answer without filling the view where it needs none, else the policy's.
   */
  decide(o: ResolvedOptions, lane: { readonly size: number; oldestEnqueuedAt(): number }, inFlight: number, draining: boolean): ReleaseDecision & { reason?: ReleaseReason } {
    const queue = this.queue;
    const rows = queue.rows + lane.size;
    if (draining) {
      return { release: true, maxRows: o.maxBatchSize, reason: rows >= o.maxBatchSize ? 'full' : 'drain' };
    }
    // What greedyPolicy.decide answers when there is no window, no preferred size and one level,
    // without filling the view: the decision is made per batch on the hot path.
    if (o.policy === greedyPolicy && o.maxDelayMs <= 0 && o.preferredBatchSizes === undefined && o.priorities === undefined) {
      return { release: true, maxRows: o.maxBatchSize, reason: rows >= o.maxBatchSize ? 'full' : 'idle' };
    }
    this.now = o.clock.now();
    this.queuedRows = rows;
    this.queuedRequests = queue.size + lane.size;
    this.oldestEnqueuedAt = lane.size > 0 ? lane.oldestEnqueuedAt() : (queue.oldestEnqueuedAt() as number);
    this.inFlight = inFlight;
    this.freeSlots = o.maxConcurrentBatches - inFlight;
    this.maxBatchSize = o.maxBatchSize;
    this.maxLatencyMs = o.maxLatencyMs;
    this.preferredBatchSizes = o.preferredBatchSizes;
    const levels = o.priorities;
    if (levels === undefined) {
      this.maxDelayMs = o.maxDelayMs;
      this.windowEndsAt = this.oldestEnqueuedAt + o.maxDelayMs;
    } else {
      const w = queue.earliestWindow((p) => levels.get(p)?.maxDelayMs ?? o.maxDelayMs) as { end: number; delay: number };
      this.maxDelayMs = w.delay;
      this.windowEndsAt = w.end;
    }
    try {
      return o.policy.decide(this);
    } catch (e) {
      if (!warnedPolicy) {
        warnedPolicy = true;
        process.emitWarning(`microbatch: release policy '${o.policy.name}' threw (${toError(e, 'policy').message}); releasing instead of stalling`);
      }
      return { release: true, maxRows: o.maxBatchSize, reason: 'idle' };
    }
  }
}
