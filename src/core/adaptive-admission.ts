import type { Arrivals } from './adaptive-arrivals';
import type { Handoff } from './adaptive-handoff';
import { Outrun } from './adaptive-outrun';
import type { LatencyModel } from './latency-model';
import type { QueuedRequestInfo, QueueView } from './policy';

/**
 * Full batches per slot that may wait under overload to keep the slots fed, and while the arrival
 * rate is not known yet: the next batch and half the one after (bench/overload.ts measured 1, 1.5
 * and 2 as fixed caps: with 1 the queue runs short of a full batch at 120% load, with 2 a slow
 * spell that doubles run times makes the second batch's requests late on a 1 + 0.5·n ms model).
 */
const OVERLOAD_QUEUE_BATCHES = 1.5;

/**
 * The full batch's estimate is read this much slow when counting what a doubled run time ends in
 * time: on a 1 + 0.5·n ms model with a 100 ms budget three doubled batches take 102 ms, and the
 * estimate's jitter alone (a few percent) let two batches wait, late in the next spell.
 */
const ESTIMATE_MARGIN = 1.1;

/**
 * Poisson deviations of the rows arriving per batch the queue keeps in reserve, so that a slot
 * freeing finds a full batch: with 2, about one batch in 40 waits short of full.
 */
const FULL_BATCH_RESERVE_SD = 2;

/** The slowdown the queue must survive: a request at its back still ends in time with run times doubled. */
const SLOWDOWN = 2;

/**
 * The slowdown a backlog must no longer survive before arrivals that outran the model start the
 * overload: a queue past the overload's cap (see `SLOWDOWN`) is still answered in time at the
 * model's speed, so starting there refused requests a greedy host answered in time wherever that
 * cap is a batch or two (live, the classifier at 95% load with its arrivals in bursts and the
 * machine slow for a moment: 9-75 refusals a run in 10 of 45 replayed runs where greedy missed
 * none; none now). Started once the backlog reaches what a 1.25× slowdown ends in time, the onset
 * still keeps the queue short: the overload benches moved by at most 2 answers a seed.
 */
const START_SLOWDOWN = 1.25;

/**
 * Budgets of arrivals the end of an overload is judged on, at a slot that found less than a full
 * batch queued. Over one budget, 120% load read below capacity now and then at such a slot (a
 * spell of short arrivals), the overload ended in the middle of it and the queue grew unbounded
 * into a slow spell (simulated, 10 + 0.1·n ms, 20 fresh seeds: 122 late answers on one); over two,
 * no overload at 120% or 150% ended early on those seeds, and after a fall from 150% to 95% the
 * overload still ends within a few hundred milliseconds.
 */
const CAUGHT_UP_BUDGETS = 2;

/**
 * Arrivals over the last budget at this many times what the slots serve at the model's own speed
 * (or the current estimate's, before one is recorded) outpace the model: outside overload the
 * certain-miss test then judges as the overload does, on the mean rather than the optimistic end,
 * and after a batch that ran slow at its slowdown (see `lastRanSlowBy`). The backlog is growing,
 * so a request whose batch ends past its due time on the mean is more likely late than not: from
 * a cold host at 150% (10 + 0.1·n ms, 5 seeds × 12 s) 23 answers at the budget's edge were late.
 * Without the rate test a slow spell below capacity read as a certain miss (simulated, 10 seeds ×
 * 12 s with 2× spells, missed at 70% load 0.363% → 0.534% on a 10 + 0.1·n ms model, at 95% 3.30%
 * → 3.72%); at 1.0× the 95% cells still missed 0.3% more; at 1.1× they are unchanged (±0.01%),
 * and after an onset from 70% the test passes within 80 ms at 120%, 50 ms at 150%.
 */
const OUTPACED_RATE = 1.1;

/** Batches the latency model learns from before its full-batch time counts as the model's own speed. */
const SPEED_AFTER_BATCHES = 6;

/**
 * Batches a host runs cold: before its latency model has learned from this many, arrivals that
 * outpaced the model (see `OUTPACED_RATE`) over a busy period at least a budget long are judged on
 * a backlog priced at `COLD_SLOWDOWN`. A cold host cannot start the overload by the rate (the
 * model's own speed is trusted only a budget after it is first recorded: adaptive-outrun.ts), so
 * from a cold start into an overload the backlog grew to the budget's edge before the first certain
 * miss, about six full batches, where a slow spell or the estimate's jitter made the requests
 * admitted there late (simulated, 10 + 0.1·n ms at 150%, 100 ms budget, 10% jitter and 2× spells,
 * 40 seeds: 161 late answers in the first 200 ms, the best queue bound none; now none). Twice
 * `SPEED_AFTER_BATCHES`: at 150% that is about when the speed is trusted. The pricing ends with the
 * cold start, so a host below capacity that starts in a slow spell (its estimate the spell's, its
 * arrivals outpacing that) is priced so only for its first dozen batches (bench/spells.ts: the same
 * cells flagged). And the busy period must be a budget long, as for the overload by the rate: a
 * burst shorter than the budget is what the budget absorbs (a cold host sent 128 requests at once
 * and 200 more 63 ms later refused 40 that a greedy host answered in time when any busy period
 * counted).
 */
const COLD_BATCHES = 2 * SPEED_AFTER_BATCHES;

/**
 * The slowdown a cold host's backlog is priced at while arrivals outpace it (see `COLD_BATCHES`):
 * with 1.5 the late answers of a cold start at 150% went from 161 to none; 1.25 left 30, and 2 (the
 * overload queue's `SLOWDOWN`) refused more on the spells grid's cold hosts below capacity (85 → 100
 * misses at 70% load on 10 + 0.1·n ms with a 200 ms budget, where 1.5 left 85).
 */
const COLD_SLOWDOWN = 1.5;

/**
 * The {@link microbatch!AdaptivePolicy}'s admission at arrival: whether a request that just joined
 * the queue can still be answered in time, judged on figures the last decision cached (this runs
 * per request), and the overload state those refusals reveal. Nothing is refused before the model
 * has a line fitted, or while a slot is free (the next decision, on this turn, plans it); an
 * arrival that finds a slot free also ends the overload: the model ran out of work, so the load is
 * below its capacity; as does a slot that frees with less than a full batch queued when the
 * arrivals of the last two budgets came slower than the model serves them (see `#caughtUp`).
 * Otherwise, with every slot busy, the backlog ahead of the request runs in full batches back to
 * back from when the first running batch is predicted to end, and:
 * - outside overload a request is refused only when even an optimistic end (its batch as it
 *   stands, the chain's `k·√n·σ` taken off rather than added) reaches its due time: a certain
 *   miss (while arrivals outpace the model, on the mean, and after a batch that ran slow at its
 *   slowdown: see `OUTPACED_RATE`; on a cold host at a slowdown: see `COLD_BATCHES`). Such a
 *   refusal means the backlog has grown past the budget, which Poisson fluctuation below capacity
 *   does not do (at 95% load the queue's excursions stay inside any budget a greedy host meets),
 *   so it starts the overload;
 * - arrivals that outran the model's own speed over a busy period a budget long (see
 *   adaptive-outrun.ts) start the overload earlier, once the queue holds more than the overload
 *   keeps and more than a 1.25× slowdown still ends in time (see `START_SLOWDOWN`), before the
 *   backlog reaches the budget: its edge is where requests are answered late;
 * - in overload a request is refused when more rows wait than the queue kept (see `#queueCap`;
 *   counting the batches sent ahead to the executor, which wait there), or when
 *   its batch counted full would end at or past its due time on the mean
 *   (as the decision sheds under overload: the reserve would refuse requests that mostly make
 *   it). Under sustained overload the queue beyond what keeps the slots fed with full
 *   batches adds no throughput, only waiting: kept short, it lets a slow spell that doubles run
 *   times still end its requests in time, and the callers refused learn it on arrival instead of
 *   at their deadline.
 * @internal
 */
export class Admission {
  /** The backlog grew past the budget (a certain miss was refused) or arrivals outran the model; ends when the model caught up with the arrivals. */
  overload = false;
  /** Requests refused so far, by reason (see {@link microbatch!AdaptiveStats}). */
  readonly refused = { certainMiss: 0, overQueue: 0, overBudget: 0 };
  /** Overloads started because arrivals outran the model (adaptive-outrun.ts), before any certain miss. */
  overloadsByRate = 0;
  /**
   * The last batch's run time over its prediction when the policy read it as a slow spell starting
   * (1.3× or more), else 1. Outside overload, while arrivals outpace the model (see
   * `OUTPACED_RATE`), the certain-miss test prices the backlog at this slowdown: the latency
   * model follows a spell a clipped step at a time, and a spell at an overload's onset let the
   * backlog grow to the budget at the old speed, late at the new one (simulated, 10 + 0.1·n ms, a
   * 100 ms budget, 10% jitter, 70% load then 120% with a 2× spell starting 10 ms before to 50 ms
   * after the onset, 5 seeds each: 463–665 answers of the onset late, now 137–278).
   */
  lastRanSlowBy = 1;
  readonly #outrun: Outrun;
  #now = 0;
  #slots = Infinity;
  #maxBatchSize = 1;
  #budget = Infinity;
  /** A full batch's mean run time and spread (0 before a line is fitted), and the reserve's k. */
  #fullMs = 0;
  #fullSd = 0;
  #k = 0;
  /** Whole batches per slot a doubled run time still ends in time (see `#queueCap`), as of the last refit. */
  #safeBatches = 1;
  /** Whole batches per slot a run time `START_SLOWDOWN` times slower still ends in time, as of the last refit. */
  #startBatches = 1;
  /** A full batch at the model's own speed, or at the current estimate where that is faster or none is recorded (0 before a line is fitted), as of the last refit. */
  #speedMs = 0;

  /** Batch slots (`inFlight + freeSlots`) at the last decision. */
  get slots(): number {
    return this.#slots;
  }

  /** `maxBatchSize` at the last decision: the rows of a full batch, as a batch sent ahead is. */
  get maxBatchSize(): number {
    return this.#maxBatchSize;
  }

  /**
   * `arrivals`: the policy's record of arrivals (the end of an overload reads their recent rate);
   * `overloadMs`: the policy's overload window, over which the model's own speed is remembered.
   */
  constructor(
    private readonly model: LatencyModel,
    private readonly marginMs: number,
    private readonly handoff: Handoff,
    private readonly arrivals: Arrivals,
    overloadMs: number,
  ) {
    this.#outrun = new Outrun(overloadMs);
  }

  /** Caches the host's limits and the model's full-batch figures, once per decision. */
  update(view: QueueView): void {
    this.#slots = view.inFlight + view.freeSlots;
    this.#maxBatchSize = view.maxBatchSize;
    this.#budget = view.maxLatencyMs;
    this.#now = view.now;
    this.refit();
    if (this.overload && view.freeSlots > 0 && view.queuedRows < view.maxBatchSize) this.#caughtUp(view.now);
  }

  /**
   * A slot freed with less than a full batch queued: the model caught up with the arrivals, as it
   * does as soon as the load falls below capacity, and now and then under overload (a run of short
   * arrivals leaves the queue kept short: about one batch in 40 at 120% load, by its reserve). So
   * the overload ends, and a busy period starts, only when the arrivals of the last
   * `CAUGHT_UP_BUDGETS` budgets also came slower than the slots serve full batches at the model's
   * current speed. An arrival finding a slot free is not enough to end it: near capacity a
   * batching host is rarely idle (at 95% load its batches grow to about 30 rows of 32 and run back
   * to back), and the overload went on refusing at the queue's cap requests a greedy host answered
   * in time (simulated, 150% then 95% load for 3 s, 10 seeds per model: 827 refusals of requests
   * sent 300 ms or more after the fall, until the end of the run; none now).
   */
  #caughtUp(now: number): void {
    // Without a budget (only deadlines) the window is the arrivals' whole overload window.
    if (!(this.#fullMs > 0) || this.arrivals.recentRate(now, CAUGHT_UP_BUDGETS * this.#budget) * this.#fullMs >= this.#slots * this.#maxBatchSize) return;
    this.overload = false;
    this.#outrun.idle(now);
  }

  /**
   * Caches the model's full-batch figures again after it learned from a batch: while batches go
   * ahead under overload no decision is asked, and the figures must follow a slow spell.
   */
  refit(): void {
    const m = this.model;
    const fitted = m.fit === 'line';
    // A full batch as the host sees it: its run time and the handoff around it.
    this.#fullMs = fitted ? (m.predict(this.#maxBatchSize) as number) + this.handoff.ms : 0;
    this.#fullSd = fitted ? (m.stdMs(this.#maxBatchSize) as number) : 0;
    this.#k = m.k;
    // The model's own speed, once a decision told the full batch's size and the line rests on one
    // and on a few batches (a line fitted on two or three sizes read a 10 + 0.1·n ms model's full
    // batch 11% fast, and hid a 120% overload).
    if (fitted && this.#slots !== Infinity && m.maxObservedRows >= this.#maxBatchSize && m.samples >= SPEED_AFTER_BATCHES) this.#outrun.fullBatch(this.#now, this.#fullMs);
    // Waves of full batches, after the running ones, that end within the budget with run times
    // doubled: the back of the queue may be in the last of them. At the model's own speed when it
    // is slower now: the doubling stands for a spell, and read at a spell's estimate (and for the
    // 100-150 ms the estimate takes to come down after it) the queue fell from 64 rows to 38-40 on
    // a 10 + 0.1·n ms model, and short batches followed. Cached here, not per request: every figure
    // it reads changes only with a refit.
    const speed = (this.#speedMs = Math.min(this.#fullMs, this.#outrun.nominalMs));
    this.#safeBatches = this.#waves(SLOWDOWN, speed);
    this.#startBatches = this.#waves(START_SLOWDOWN, speed);
  }

  /** Whole batches per slot, after the running ones, that end within the budget with full batches of `speed` ms run `slowdown` times slower (at least one). */
  #waves(slowdown: number, speed: number): number {
    return Math.max(1, Math.floor((this.#budget - this.marginMs) / (slowdown * ESTIMATE_MARGIN * speed)) - 1);
  }

  /**
   * Whether a request just queued behind `queuedRows` rows (its own included) is admitted, with
   * `inFlight` batches running and the first of them predicted to end at `firstEnd`.
   */
  admits(request: QueuedRequestInfo, queuedRows: number, inFlight: number, firstEnd: number): boolean {
    const slots = this.#slots;
    if (inFlight < slots) {
      this.overload = false;
      this.#outrun.idle(request.enqueuedAt);
      return true;
    }
    const max = this.#maxBatchSize;
    const outran = this.#outrun.arrived(request.enqueuedAt, request.rows, slots, max, this.#budget, this.#recentRate);
    if (this.#fullMs === 0) return true;
    const due = Math.min(request.deadline, request.enqueuedAt + this.#budget) - this.marginMs;
    if (due === Infinity) return true;
    // Batches sent ahead to the executor (in flight beyond the slots) are full and wait there: the
    // queue's cap counts them, or a batch ahead would add a whole batch of waiting to every caller.
    const waiting = queuedRows + (inFlight - slots) * max;
    // Arrivals that outran the model start the overload once the queue holds more than a slight
    // slowdown still ends in time (see `START_SLOWDOWN`) and more than the overload keeps. The
    // cached mark first: a busy period stays outrun, and the cap is worked out, once, only past it
    // or in overload (this runs per request).
    if ((this.overload || (outran && waiting > this.#startBatches * slots * max)) && waiting > this.#queueCap(request.enqueuedAt, slots, max)) {
      if (!this.overload) this.overloadsByRate++;
      this.overload = true;
      return this.#refuse('overQueue');
    }
    const ahead = Math.ceil(queuedRows / max) - 1; // full batches before its own
    const start = Math.max(request.enqueuedAt, firstEnd);
    const chain = Math.floor(ahead / slots) + 1;
    const spread = this.#k * Math.sqrt(chain) * this.#fullSd;
    if (this.overload) {
      // On the mean, as the decision sheds under overload: a refusal is as much a miss as a late
      // answer, and the reserve refused requests that mostly made it (live on the classifier, with
      // a full batch's spread learned at 3.8-4.7 ms of 32, 780-810 such refusals a run at 120%
      // where 4 came with a spread of 1.8, and 10-14% less goodput).
      if (start + chain * this.#fullMs < due) return true;
      // Only a request in the next batch that fails that bound is judged on its batch as it stands
      // (the decision may cut the batch short for it).
      if (ahead === 0 && start + (this.model.predict(queuedRows) as number) + this.handoff.ms < due) return true;
      return this.#refuse('overBudget');
    }
    // In time on the mean: admitted without reading the arrival rate (the common case), except
    // on a cold host (see `COLD_BATCHES`).
    const cold = this.model.samples < COLD_BATCHES && this.#outrun.busyFor(request.enqueuedAt) >= this.#budget;
    if (!cold && this.lastRanSlowBy === 1 && start + chain * this.#fullMs < due) return true;
    // While arrivals outpace the model, judged as in overload, on the mean, and after a batch
    // that ran slow at its slowdown (see `OUTPACED_RATE`), or on a cold host at `COLD_SLOWDOWN`;
    // otherwise on the optimistic end.
    const outpaced = this.#outpaced(request.enqueuedAt, slots, max);
    const slow = outpaced ? Math.max(this.lastRanSlowBy, cold ? COLD_SLOWDOWN : 1) : 1;
    const reserve = outpaced ? 0 : spread;
    if (start + chain * this.#fullMs * slow - reserve < due) return true;
    const own = queuedRows - ahead * max;
    if (start + ((chain - 1) * this.#fullMs + (this.model.predict(own) as number)) * slow + this.handoff.ms - reserve < due) return true;
    this.overload = true;
    return this.#refuse('certainMiss');
  }

  /**
   * The rows that may wait under overload (per host, with `slots` slots): one full batch per slot,
   * plus what keeps the next one full (at most `OVERLOAD_QUEUE_BATCHES` batches per slot), or plus
   * the whole batches a doubled run time still ends in time, whichever is more. Past what keeps the
   * slots fed with full batches a longer queue adds no throughput while the overload lasts; so at
   * 150% load, where a batch's run time brings 1.5 batches of rows, one batch waits, and a slow
   * spell that doubles run times no longer makes the back of the queue late (simulated, 1 + 0.5·n
   * ms: 20 late answers a 12 s run with 1.5 batches, none with 1). A queue that a doubled run time
   * still ends in time costs no misses, keeps batches full through jitter, is answered in the
   * capacity freed when the load falls (over 70% → 120% → 70% → 150% → 95% load on a 10 + 0.1·n
   * ms model, two batches where one and a half were kept: 0.991× → 0.998× the best bound), and
   * absorbs an overload that is only a stretch: where batches are short against the budget, a
   * machine running 1.2–1.5× slow for 400 ms took a wide MLP (a full batch of 64 in 1.4 ms, 100 ms
   * budget) to 108% of its capacity, the overload started, and a cap of two batches refused 1,337
   * requests that a greedy host answered in time (replayed on that live run's timeline; none with
   * the ~26 batches a doubled run time ends in time there). The cap was two batches at most until
   * 28 Nov.
   */
  #queueCap(at: number, slots: number, max: number): number {
    const most = OVERLOAD_QUEUE_BATCHES * slots * max;
    // Rows that arrive between two slots freeing, at the model's own speed.
    const perFree = this.#outrun.rowsPerFullBatch(at, this.#budget) / slots;
    if (!(perFree > 0)) return most;
    const keepsFull = max - perFree + FULL_BATCH_RESERVE_SD * Math.sqrt(perFree);
    const fed = Math.min(most, slots * max + Math.max(0, keepsFull));
    return Math.max(fed, this.#safeBatches * slots * max);
  }

  /** The arrival rate over the last budget up to `at`, in rows per ms (made once: this runs per request). */
  readonly #recentRate = (at: number): number => this.arrivals.recentRate(at, this.#budget);

  /** Whether the arrivals of the last budget came at `OUTPACED_RATE` times what the slots serve at the model's own speed or faster. */
  #outpaced(at: number, slots: number, max: number): boolean {
    return this.#recentRate(at) * this.#speedMs >= OUTPACED_RATE * slots * max;
  }

  #refuse(reason: keyof Admission['refused']): false {
    this.refused[reason]++;
    return false;
  }
}
