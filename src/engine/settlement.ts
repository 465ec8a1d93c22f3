import { isError } from '../core/describe';
import type { RequestOutcome } from '../core/observer';
import type { RequestOptions, ResolvedOptions } from '../core/options';
import type { QueuedRequestInfo } from '../core/policy';
import type { ReleasedBatch } from './batch-run';
import type { ExecutorSwap } from './executor-swap';
import type { PipelineConfig } from './pipeline';
import { LaneBatch, type PlainLane } from './plain-lane';
import type { Reporter } from './reporting';
import { checkRequestOptions } from './request-options';
import { PendingRequest, RequestState, type RequestBatch } from './request';
import type { RequestQueue } from './request-queue';
import { abortedQueued, abortedRunning, loweredBelow, shedByPrediction, timedOutQueued, timedOutRunning } from './settle-errors';
import { StatsCounters } from './stats';

/** How a request ended, when it did not get a value (`'queue-full'` is a refusal, never a settlement). */
export type Failure = Exclude<RequestOutcome, 'ok' | 'queue-full'>;

/** When a batch sent ahead started running in its executor (`NaN` until then). @internal */
export interface AheadStart {
  at: number;
}

/** What the settlement tells its host. @internal */
export interface SettlementHooks {
  /** A batch slot is free again; `blockedLoop` says the batch held the event loop. */
  slotFreed(blockedLoop: boolean): void;
  /** A request left the queue without running (the host may have gone idle). */
  left(): void;
}

/**
 * How a host's requests end, each exactly once, and what a batch run needs instead of the host:
 * the batch slots (`maxConcurrentBatches`, counted here, lent to the pipeline for a partitioned
 * batch's groups), the counters, the settling of a batch's results, and the early ends of a
 * request (its deadline or signal while queued or running, a shed, a stop). The host keeps the
 * decisions: it hears back through its hooks.
 * @internal
 */
export class Settlement<In, Out> {
  /** Batches running (slots taken). */
  inFlight = 0;
  /** Requests in running batches. */
  runningRequests = 0;
  readonly stats = new StatsCounters();
  /** Batches sent ahead (see `Executor.batchesAhead`) whose executor has not started them yet, oldest first. */
  readonly #waitingAhead: AheadStart[] = [];
  readonly pipeline: PipelineConfig<In, Out, unknown, unknown>;

  /** @param options - the host's current options (the host replaces them on `configure()`). */
  constructor(
    public options: ResolvedOptions,
    readonly reporter: Reporter,
    readonly executors: ExecutorSwap<unknown, unknown>,
    batcher: PipelineConfig<In, Out, unknown, unknown>['batcher'],
    private readonly queue: RequestQueue<PendingRequest<In, Out>>,
    private readonly lane: PlainLane<In, Out>,
    private readonly hooks: SettlementHooks,
  ) {
    this.pipeline = {
      batcher,
      run: (batch) => executors.current.run(batch),
      isolateErrors: options.isolateErrors,
      now: () => this.options.clock.now(),
      name: options.name,
      slots: {
        tryTake: () => {
          if (this.inFlight >= this.options.maxConcurrentBatches) return false;
          this.inFlight++;
          return true;
        },
        give: () => this.give(false),
      },
    };
  }

  /** Takes the host's new options; rejects queued requests that no longer fit a lowered `maxBatchSize`. */
  reconfigure(options: ResolvedOptions): ResolvedOptions {
    this.options = options;
    const max = options.maxBatchSize;
    for (const r of this.queue.live()) if (r.rows > max) this.leaveQueue(r, loweredBelow(options.name, max, r.rows), 'error');
    return options;
  }

  /** Requests waiting, in the queue and in the plain lane. */
  queued(): number {
    return this.queue.size + this.lane.size;
  }

  /** A batch takes a slot and counts in the stats; returns what `finished` hands back. */
  started(requests: number, rows: number): unknown {
    this.inFlight++;
    this.runningRequests += requests;
    this.stats.batch(requests, rows);
    return this.executors.begin();
  }

  /**
   * A batch goes to the executor ahead of a free slot: the returned record learns when the
   * executor starts it (when the next batch before it ends), so that its run time is the model's.
   */
  waitAhead(): AheadStart {
    const start: AheadStart = { at: Number.NaN };
    this.#waitingAhead.push(start);
    return start;
  }

  /** A batch is over (answered, or given up on by `batchTimeoutMs`): free its slot. */
  finished(requests: number, blockedLoop: boolean, token: unknown): void {
    // The executor runs what waits ahead in order: the oldest starts in the place this one left.
    const next = this.#waitingAhead.shift();
    if (next !== undefined) next.at = this.options.clock.now();
    this.runningRequests -= requests;
    this.executors.end(token);
    this.give(blockedLoop);
  }

  /** Gives a slot back. */
  give(blockedLoop: boolean): void {
    this.inFlight--;
    this.hooks.slotFreed(blockedLoop);
  }

  /** Settles a finished batch's requests, each with its own result; returns how many got a value. */
  settle(batch: ReleasedBatch<In>, results: ReadonlyArray<Out | Error>): number {
    const reporter = this.reporter;
    const report = reporter.requests;
    let succeeded = 0;
    if (batch instanceof LaneBatch) {
      // Nothing but the batch settles a lane request (no timer, no signal), and the batch run
      // settles each batch once, so no state is checked.
      const b = batch as LaneBatch<In, Out>;
      for (let i = 0; i < b.length; i++) {
        const value = results[i];
        if (isError(value)) {
          this.stats.reject('error');
          b.rejectAt(i, value);
          if (report) reporter.settled({ rows: 1, enqueuedAt: b.enqueuedAt(i), startedAt: b.startedAt }, 'error');
        } else {
          (b.resolves[i] as (value: Out) => void)(value as Out);
          succeeded++;
          if (report) reporter.settled({ rows: 1, enqueuedAt: b.enqueuedAt(i), startedAt: b.startedAt }, 'ok');
        }
      }
      return succeeded;
    }
    const requests = (batch as RequestBatch<In, Out>).requests;
    for (let i = 0; i < requests.length; i++) {
      const value = results[i];
      const r = requests[i] as PendingRequest<In, Out>;
      if (isError(value)) this.reject(r, value, 'error');
      else if (this.#resolve(r, value as Out, report)) succeeded++;
    }
    return succeeded;
  }

  /** Rejects request `i` of a running batch (a lane request is settled only by its batch's run). */
  rejectAt(batch: ReleasedBatch<In>, i: number, error: Error, outcome: Failure): void {
    if (batch instanceof LaneBatch) {
      const b = batch as LaneBatch<In, Out>;
      this.stats.reject(outcome);
      b.rejectAt(i, error);
      if (this.reporter.requests) this.reporter.settled({ rows: 1, enqueuedAt: b.enqueuedAt(i), startedAt: b.startedAt }, outcome);
      return;
    }
    this.reject((batch as RequestBatch<In, Out>).requests[i] as PendingRequest<In, Out>, error, outcome);
  }

  /** Rejects every waiting request (the start failed, or a stop without draining). */
  rejectQueued(error: () => Error, outcome: Failure): void {
    for (const r of this.queue.clear()) this.reject(r, error(), outcome);
    const now = this.options.clock.now();
    for (const b of this.lane.clear()) {
      b.startedAt = now;
      for (let i = 0; i < b.length; i++) this.rejectAt(b, i, error(), outcome);
    }
  }

  /** A request's time limit passed: it leaves the queue, or its running result will be discarded. */
  expired(r: PendingRequest<In, Out>): void {
    const o = this.options;
    const elapsed = o.clock.now() - r.enqueuedAt;
    const limit = r.deadline - r.enqueuedAt;
    if (r.state === RequestState.Queued) this.leaveQueue(r, timedOutQueued(o.name, elapsed, limit), 'timeout');
    else if (r.state === RequestState.Running) this.reject(r, timedOutRunning(o.name, elapsed, limit), 'timeout');
  }

  /** A request's signal aborted: it leaves the queue, or its running result will be discarded. */
  aborted(r: PendingRequest<In, Out>): void {
    const reason = r.extras?.signal?.reason;
    if (r.state === RequestState.Queued) this.leaveQueue(r, abortedQueued(this.options.name, reason), 'aborted');
    else if (r.state === RequestState.Running) this.reject(r, abortedRunning(this.options.name, reason), 'aborted');
  }

  /** Rejects the requests the policy sheds (those still queued). */
  shed(requests: ReadonlyArray<QueuedRequestInfo>): void {
    const o = this.options;
    const now = o.clock.now();
    for (const info of requests) {
      const r = info as PendingRequest<In, Out>;
      if (!(r instanceof PendingRequest) || r.state !== RequestState.Queued) continue;
      this.queue.discard(r);
      this.reject(r, shedByPrediction(o.name, now - r.enqueuedAt, o.policy.name), 'shed');
    }
    this.hooks.left();
  }

  /** Takes a queued request out of the queue and rejects it. */
  leaveQueue(r: PendingRequest<In, Out>, error: Error, outcome: Failure): void {
    this.queue.discard(r);
    this.reject(r, error, outcome);
    this.hooks.left();
  }

  /** Rejects a request unless it is settled already. */
  reject(r: PendingRequest<In, Out>, error: Error, outcome: Failure): void {
    if (r.state === RequestState.Settled) return;
    this.#cleanup(r);
    this.stats.reject(outcome);
    r.reject(error);
    if (this.reporter.requests) this.reporter.settled(r, outcome);
  }

  /** Refuses a call whose options are bad (see `checkRequestOptions`); undefined when they are good. */
  refuseBad(options: RequestOptions): Promise<never> | undefined {
    const bad = checkRequestOptions(this.options.name, options);
    return bad === undefined ? undefined : this.refuse(bad, 'error');
  }

  /** Rejects a request that was never queued. */
  refuse(error: Error, outcome: RequestOutcome): Promise<never> {
    this.stats.reject(outcome);
    this.reporter.refused(outcome);
    return Promise.reject(error);
  }

  /** Returns false if the request was already settled (timed out or aborted while running). */
  #resolve(r: PendingRequest<In, Out>, value: Out, report: boolean): boolean {
    if (r.state === RequestState.Settled) return false;
    this.#cleanup(r);
    r.resolve(value);
    if (report) this.reporter.settled(r, 'ok');
    return true;
  }

  #cleanup(r: PendingRequest<In, Out>): void {
    const ran = r.state === RequestState.Running;
    r.state = RequestState.Settled;
    if (!ran) r.startedAt = this.options.clock.now();
    const x = r.extras;
    if (x === undefined) return;
    x.context = undefined;
    x.disarm(this.options.clock);
  }
}
