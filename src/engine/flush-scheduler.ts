import { systemClock } from '../core/clock';
import { mayGoAhead } from './batches-ahead';
import type { Lifecycle } from './lifecycle';
import type { PlainLane } from './plain-lane';
import { LiveQueueView } from './queue-view';
import { releaseBatches } from './release-loop';
import type { PendingRequest } from './request';
import type { RequestQueue } from './request-queue';
import type { Settlement } from './settlement';
import { WakeTimer } from './wake-timer';

const resolved = Promise.resolve();

/**
 * When a {@link microbatch!ModelHost} flushes (runs its release loop, release-loop.ts): at the end
 * of the tick a request arrived in, when a slot frees, when the wake timer a policy armed fires,
 * and while an executor holds batches ahead. `schedule()` runs per request, the rest per batch.
 * @internal
 */
export class FlushScheduler<In, Out> {
  /** The host's one timer for "decide again at time t". */
  readonly wake: WakeTimer;
  /** The serving executor's `batchesAhead` (the host sets it again when a reload swaps it). */
  batchesAhead = 0;
  #scheduled = false;
  readonly #view: LiveQueueView;
  readonly #flushBound = (): void => this.#flush();
  readonly #canGoAheadBound = (): boolean => this.canGoAhead();
  readonly #afterNextTurnBound = (): void => void setImmediate(this.#flushBound);
  readonly #scheduleFlushBound = (): void => void process.nextTick(this.#flushBound);

  /** `start`: the host's start, called by a flush that finds the host not started yet. */
  constructor(
    private readonly s: Settlement<In, Out>,
    private readonly queue: RequestQueue<PendingRequest<In, Out>>,
    private readonly lane: PlainLane<In, Out>,
    private readonly life: Lifecycle,
    private readonly start: () => Promise<void>,
  ) {
    this.#view = new LiveQueueView(queue);
    this.wake = new WakeTimer(s.options.clock, () => this.schedule());
  }

  /**
   * Asks for a flush at the end of the current tick, after every promise job already queued, so
   * that a burst of synchronous calls (or callers woken by the last batch) forms one batch. This is
   * not a timer: a lone request still starts without measurable delay.
   */
  schedule(): void {
    const s = this.s;
    if (this.#scheduled || s.queued() === 0 || (s.inFlight >= s.options.maxConcurrentBatches && !this.canGoAhead())) return;
    this.#scheduled = true;
    // The callback only queues a nextTick, so this promise does not reject.
    void resolved.then(this.#scheduleFlushBound);
  }

  /** {@link mayGoAhead} on the host's state now (most executors hold none: one read per request while the slots are busy). */
  canGoAhead(): boolean {
    return this.batchesAhead > 0 && mayGoAhead(this.s.options, this.batchesAhead, this.s.inFlight, this.queue.rows + this.lane.size, this.life.draining);
  }

  /**
   * A batch slot is free again (a batch, or a group on a lent slot, finished): wake whoever waits.
   * After a batch that held the event loop (`blockedLoop`), the next decision waits for the loop's
   * timers phase: requests that arrived meanwhile are still in timer and I/O callbacks, and deciding
   * in this microtask would release a batch without them (measured: 1 request released, 51
   * issued right after). On the real loop two `setImmediate` turns get there: the second runs in
   * the check phase of a loop turn whose timers and I/O phases came after the block, whichever
   * phase the batch ended in. (A 0 ms timer did too, but Node fires it after 1 ms or more: 0.7–0.8
   * ms lost between back-to-back batches.) An injected clock has no loop: a 0 ms timer there.
   */
  slotFreed(blockedLoop: boolean): void {
    this.life.notifyIdle();
    if (blockedLoop && !this.#scheduled && this.s.queued() > 0 && !this.life.draining) {
      this.#scheduled = true;
      const clock = this.s.options.clock;
      if (clock === systemClock) setImmediate(this.#afterNextTurnBound);
      else clock.setTimer(this.#flushBound, 0);
      return;
    }
    this.schedule();
  }

  #flush(): void {
    this.#scheduled = false;
    const state = this.life.state;
    if (state !== 'ready') {
      if (state === 'new') void this.start().catch(() => undefined);
      return;
    }
    releaseBatches(this.s.options, this.s, this.queue, this.lane, this.#view, this.wake, this.life.draining, this.#canGoAheadBound);
  }
}
