import { ADAPTIVE_DEFAULTS } from './defaults';
import { Admission } from './adaptive-admission';
import { Arrivals } from './adaptive-arrivals';
import { Handoff } from './adaptive-handoff';
import { LatencyModel } from './latency-model';
import { nonNegative, type AdaptivePolicyOptions, type AdaptiveStats } from './adaptive-options';
import { countAhead, learnedCosts, nobodyLate, planQueue, slowedBy, smallerFirst, type Costs, type Item, type PlannedBatch, type Slot } from './adaptive-plan';
import type { BatchOutcome, QueuedRequestInfo, QueueView, ReleaseDecision, ReleasePolicy, ReleaseReason } from './policy';

// The options and counters are declared in adaptive-options.ts, the plan's shapes in adaptive-plan.ts.
export type { AdaptivePolicyOptions, AdaptiveStats } from './adaptive-options';

/**
 * The `'adaptive'` release policy: learns batch run time online ({@link LatencyModel}), releases
 * work-conserving batches like `maxDelayMs: 0`, waits for a fuller batch only when waiting is
 * predicted to lower latency, makes a batch smaller only when that leaves fewer requests late, and
 * sheds a request only when it cannot be answered in time.
 *
 * Deadlines: a request's budget ends at the earlier of its `timeoutMs` and `enqueuedAt +
 * maxLatencyMs` (minus `marginMs`). The policy plans the waiting queue in queue order as full
 * batches back to back on the free and busy slots; a batch ends after the sum of the mean run
 * times chained on its slot (each with the host's handoff around it: adaptive-handoff.ts) plus `k`
 * standard deviations of that sum (one margin for the chain, growing like `√n`). Then it
 * - sheds a request that cannot finish in time even if run alone right now (judged by the
 *   optimistic {@link LatencyModel.lower});
 * - under sustained overload (the arrival rate measured over `overloadMs` above the rate full
 *   batches can serve) with requests late in the plan, sheds those whose batch ends at or past
 *   their due time on the mean alone (more likely late than not: a refusal is as much a miss as a
 *   late answer, so the reserve does not refuse anyone), but never a member of the batch about to
 *   start; so too in the admission's overload right after a batch that ran 1.3× its prediction or
 *   more, with every batch of the plan priced at that slowdown;
 * - releases the full batch, unless a smaller first batch leaves fewer requests late in the plan
 *   (a short deadline at the head), in which case it releases that one (reason `deadline`); never
 *   with more than a full batch queued, where the rows lost would delay everyone behind, nor right
 *   after a batch that ran 1.3× its prediction or more (a slow spell the model has not caught up with).
 *
 * On arrival (`enqueued`), with every slot busy, it refuses a request at once only when the backlog
 * ahead makes it certainly late; that means the backlog outgrew the budget, so it also starts the
 * overload (as do arrivals that outran the model's own speed over a busy period a budget long,
 * sooner: see adaptive-outrun.ts), during which a short queue is kept (what keeps the slots fed
 * with full batches, at most one and a half per slot, or as many as a doubled run time still ends
 * in time; the rest are refused as they arrive) until
 * the model catches up with the arrivals (see adaptive-admission.ts).
 *
 * Waiting (see docs/adaptive.md for the derivation): when the model is idle and the batch is not
 * full, waiting `t` for the next arrival saves that arrival a whole batch's fixed cost `a` but costs
 * each of the `n` waiting rows `t`. With Poisson arrivals at rate `λ` the expected gain is positive
 * for waits up to `a - n·(b + 1/λ)`; the policy waits `patience` times that, counted from the
 * newest arrival, never past a deadline, not when that wait is shorter than the timers can keep
 * (`minWaitMs`), and not at all before it has learned `a` from two batch sizes. At low load `1/λ`
 * is large, so it behaves as `maxDelayMs: 0`.
 *
 * Without `maxLatencyMs` or timeouts it is the greedy policy plus predictive waiting. Keep one
 * instance per host: it tracks that host's arrivals and running batches.
 *
 * @example
 * ```ts
 * const host = new ModelHost(fn, { maxBatchSize: 32, maxLatencyMs: 50, policy: new AdaptivePolicy() });
 * // ... later, why batches look the way they do:
 * console.log(JSON.stringify(host.latencyModel)); // { fit: 'line', interceptMs: 4.1, perRowMs: 0.26, ... }
 * ```
 */
export class AdaptivePolicy implements ReleasePolicy {
  /** Shown in errors and reports. */
  readonly name = 'adaptive';
  /** What the policy has learned about run time (shown as `host.latencyModel`). */
  readonly latencyModel: LatencyModel;
  readonly #maxWaitMs: number;
  readonly #marginMs: number;
  readonly #rateWindow: number;
  readonly #planBatches: number;
  readonly #patience: number;
  readonly #minWaitMs: number;

  readonly #arrivals: Arrivals;
  /** Predicted ends (and run-time variances) of the batches this policy released and the host still runs. */
  #running: Slot[] = [];
  #waitingUntil = -Infinity;
  /** The arrival rate the last `#gainWindow` measured (rows per ms). */
  #rate = 0;
  /** The oldest request's enqueue time when the wait began (a wake-up only counts for that queue). */
  #waitingFor = NaN;
  /** Enqueue time of the newest request the last decision read (all of them when it waited). */
  #newest = -Infinity;
  #stats = { shedAlone: 0, shedOverload: 0, waits: 0, deadlineLimited: 0 };
  /** Admission at arrival (and the overload state it keeps), from figures each decision caches. */
  readonly #admission: Admission;
  /** The host's time per batch beyond the model's run (see adaptive-handoff.ts), counted in every batch the plan chains. */
  readonly #handoff: Handoff;
  /**
   * Enqueue time of the newest arrival with a deadline of its own (a timeout): while the oldest
   * request queued is newer, none queued has one.
   */
  #deadlineAt = -Infinity;
  /** The run-time estimates once something is learned (see `#costs`): the closures read the model at every call. */
  readonly #learned: Costs;

  /** @param options - see {@link AdaptivePolicyOptions}. */
  constructor(options: AdaptivePolicyOptions = {}) {
    const m = options.latencyModel;
    this.latencyModel = m instanceof LatencyModel ? m : new LatencyModel(m);
    const model = this.latencyModel;
    this.#learned = learnedCosts(model, (this.#handoff = new Handoff()));
    this.#maxWaitMs = nonNegative('maxWaitMs', options.maxWaitMs ?? ADAPTIVE_DEFAULTS.maxWaitMs);
    this.#marginMs = nonNegative('marginMs', options.marginMs ?? ADAPTIVE_DEFAULTS.marginMs);
    this.#rateWindow = Math.max(2, Math.floor(nonNegative('rateWindow', options.rateWindow ?? ADAPTIVE_DEFAULTS.rateWindow)));
    this.#planBatches = Math.max(1, Math.floor(nonNegative('planBatches', options.planBatches ?? ADAPTIVE_DEFAULTS.planBatches)));
    this.#patience = Math.min(1, nonNegative('patience', options.patience ?? ADAPTIVE_DEFAULTS.patience));
    const overloadMs = nonNegative('overloadMs', options.overloadMs ?? ADAPTIVE_DEFAULTS.overloadMs);
    this.#arrivals = new Arrivals(this.#rateWindow, overloadMs);
    this.#minWaitMs = nonNegative('minWaitMs', options.minWaitMs ?? ADAPTIVE_DEFAULTS.minWaitMs);
    this.#admission = new Admission(model, this.#marginMs, this.#handoff, this.#arrivals, overloadMs);
  }

  /** Counters of what the policy decided so far. */
  get stats(): AdaptiveStats {
    const a = this.#admission;
    const r = a.refused;
    return { ...this.#stats, shedAtArrival: r.certainMiss + r.overQueue + r.overBudget, refusedCertainMiss: r.certainMiss, refusedOverQueue: r.overQueue, refusedOverBudget: r.overBudget, overloadsByRate: a.overloadsByRate };
  }

  /**
   * Counts each arrival once, as it joins the queue (the arrival rate and the overload test read
   * them), and refuses it at once (`false`) when it cannot be answered in time: see {@link AdaptivePolicy}.
   */
  enqueued(request: QueuedRequestInfo, queuedRows = 0, inFlight = 0): boolean {
    this.#arrivals.record(request.enqueuedAt, request.rows);
    this.#aheadOf(inFlight, request.enqueuedAt);
    if (request.deadline !== Infinity) this.#deadlineAt = request.enqueuedAt;
    // The queue's first batch starts when a slot frees after the batches sent ahead have started.
    const running = this.#running;
    return this.#admission.admits(request, queuedRows, inFlight, running[Math.max(0, running.length - this.#admission.slots)]?.at ?? -Infinity);
  }

  /** Learns from every finished batch. */
  observe(outcome: BatchOutcome): void {
    this.#running.shift();
    this.#handoff.ended(outcome.runMs);
    const m = this.latencyModel;
    // Judged against the prediction before this batch is learned from: after it the model has moved.
    // A batch `SLOW_BATCH` times its prediction or more is a slow spell starting: the admission
    // prices a backlog at its slowdown, and the next decision cuts no batch short (see `smallerFirst`).
    const slowBy = outcome.ok && m.fit === 'line' ? outcome.runMs / (m.predict(outcome.rows) as number) : 0;
    this.#admission.lastRanSlowBy = slowBy >= SLOW_BATCH ? slowBy : 1;
    m.observe(outcome);
    this.#admission.refit();
  }

  /**
   * Under overload (see adaptive-admission.ts) every batch it releases is full and nobody it keeps
   * waiting is late, so a full batch may go to a worker ahead of a free slot: the model then does
   * not wait for the main thread between batches (measured 3-4 ms per 30 ms batch on the classifier).
   */
  goesAhead(): boolean {
    return this.#admission.overload;
  }

  decide(view: QueueView): ReleaseDecision {
    const now = view.now;
    this.#handoff.decided(now, view.oldestEnqueuedAt, view.inFlight);
    this.#admission.update(view);
    while (this.#running.length > view.inFlight) this.#running.shift();
    // In overload, after a batch that ran slow (a spell starting, which the latency model follows a
    // clipped step at a time), the plan prices the queue at that slowdown: see `sustained` below.
    const slow = this.#admission.overload && this.#admission.lastRanSlowBy > 1 && this.latencyModel.fit === 'line';
    const c = slow ? slowedBy(this.#learned, this.#admission.lastRanSlowBy) : this.#costs();
    this.#aheadOf(view.inFlight, now);
    this.#arrivals.forget(now);
    // A backlog of a full batch or more that a bound on the plan shows on time: the plan would shed
    // nobody, cut nothing and release a full batch, so release it without building the plan. This
    // is the decision at every batch under high load, where its cost is throughput lost.
    if (view.queuedRows >= view.maxBatchSize && nobodyLate(view, c, this.#earliestDue(view), this.#running, this.#planBatches)) return this.#release('full', view.maxBatchSize, now, c, NONE_SHED);
    // Below a full batch, the same when no wait can pay: the plan would shed nobody and release the
    // whole queue as one batch. This is the decision at every batch at moderate load (the plan
    // built an item per request queued).
    if (view.queuedRows < view.maxBatchSize && this.#gainWindow(view, view.queuedRows) <= 0 && this.#wholeOnTime(view, c)) {
      return this.#release(this.#woke(view), view.queuedRows, now, c, NONE_SHED);
    }
    const shed: QueuedRequestInfo[] = [];
    let kept = this.#scan(view, c, shed);
    if (kept.length === 0) return { release: false, shed };
    // Everything the scan read was kept or shed: no backlog lies past the plan.
    const readAll = kept.length + shed.length >= view.queuedRequests;

    let plan = planQueue(kept, now, view, c, view.maxBatchSize, this.#running, this.#planBatches);
    // Shedding from the plan needs the overload sustained (measured over `overloadMs`), or the
    // admission's overload in a slow spell: the queue it kept was sized for the model's speed, and
    // those the spell's prices find late would take capacity that the short queue's next arrivals
    // use in time (simulated, 10 + 0.1·n ms from a cold host at 150% load, where no overload is
    // sustained in the first `overloadMs`, 100 seeds × 12 s: 1,076 late answers at the onset, now
    // 432, and 700 more in time). Cutting a batch short is off as soon as the admission's overload
    // starts too (a certain miss, or arrivals that outran the model): at an onset the cuts come in
    // a cascade (simulated at 120%: 25, 19, 17, 9, 7, 3, 1 rows), while shedding there refused
    // requests after they had waited (live at 150%: 34 a run, refusal p99 17.7 ms).
    const sustained = plan.late.length > 0 && (slow || this.#overloaded(view, now));
    if (sustained) {
      // Rejected now rather than answered late: under sustained overload somebody will be late, and
      // the callers behind are better served by a prompt refusal they can retry elsewhere.
      const starting = new Set(plan.first.members);
      // Only those more likely late than not: a shed is as much a miss as a late answer, so the
      // reserve that protects deadlines when a batch is sized must not refuse requests that would
      // probably have made it (in simulation with jitter, the reserve shed requests at the budget's
      // edge that a greedy host answered in time).
      const doomed = new Set(plan.likelyLate.filter((it) => !starting.has(it)));
      if (doomed.size > 0) {
        for (const it of doomed) {
          shed.push(it.info);
          this.#stats.shedOverload++;
        }
        kept = kept.filter((it) => !doomed.has(it));
        plan = planQueue(kept, now, view, c, view.maxBatchSize, this.#running, this.#planBatches);
      }
    }

    // A batch is cut short for a late head only where the plan's figures can be trusted and the
    // rows it costs fall on no one the plan does not see: see `smallerFirst` for when, and why not
    // after a batch that ran slow.
    const mayCut = !sustained && !this.#admission.overload && this.#admission.lastRanSlowBy === 1 && readAll && view.queuedRows <= view.maxBatchSize && this.latencyModel.fit === 'line';
    const smaller = mayCut ? smallerFirst(plan, kept, now, view, c, this.#running, this.#planBatches) : undefined;
    if (smaller !== undefined) {
      this.#stats.deadlineLimited++;
      return this.#release('deadline', smaller.rows, now, c, shed);
    }
    const first = plan.first;
    if (first.rows >= view.maxBatchSize || first.members.length < kept.length) return this.#release('full', first.rows, now, c, shed);

    const wakeAt = this.#waitUntil(view, first, c);
    if (wakeAt === undefined) return this.#release(this.#woke(view), first.rows, now, c, shed);
    if (wakeAt <= now) return this.#release('deadline', first.rows, now, c, shed);
    if (this.#waitingUntil === -Infinity) this.#stats.waits++;
    this.#waitingUntil = wakeAt;
    this.#waitingFor = view.oldestEnqueuedAt;
    return shed.length > 0 ? { release: false, wakeAt, shed } : { release: false, wakeAt };
  }

  /** Batches sent ahead (see goesAhead) were not released here: each runs full after the one before. */
  #aheadOf(inFlight: number, now: number): void {
    if (this.#running.length < inFlight) countAhead(this.#running, inFlight, now, this.#costs(), this.#admission.maxBatchSize);
  }

  /** Releases `rows` rows now, remembering the batch's predicted end for the plans to come. */
  #release(reason: ReleaseReason, rows: number, now: number, c: Costs, shed: QueuedRequestInfo[]): ReleaseDecision {
    this.#waitingUntil = -Infinity;
    this.#handoff.released(now);
    const sd = c.std(rows);
    this.#running.push({ at: now + c.mean(rows), variance: sd * sd });
    return shed.length > 0 ? { release: true, maxRows: rows, reason, shed } : { release: true, maxRows: rows, reason };
  }

  /**
   * Run-time estimates for decisions. With a fitted line: the mean and the model's spread, and
   * the optimistic lower bound as the floor for shedding. With one size `s` seen, a guess may
   * neither shrink a batch (the mean is taken as at least `t(s)` below `s` and proportional above
   * it: the first larger batch is what teaches the slope) nor shed (the floor is the proportional
   * lower bound). With nothing learned everything is 0: greedy, and no shedding on a guess.
   */
  #costs(): Costs {
    return this.latencyModel.fit === 'none' ? NOTHING_LEARNED : this.#learned;
  }

  /** The earliest due time in the queue, reading its deadlines only while one may be queued. */
  #earliestDue(view: QueueView): number {
    // The queue's deadline loop is O(backlog): skipped while no queued request can have a deadline.
    const earliest = view.oldestEnqueuedAt > this.#deadlineAt ? Infinity : view.earliestDeadline();
    return Math.min(earliest, view.oldestEnqueuedAt + view.maxLatencyMs) - this.#marginMs;
  }

  /**
   * True when the whole queue, run now as one batch, ends in time for everyone and nobody in it is
   * hopeless: the plan's single batch is not late and its floor check sheds nobody (the floor of a
   * request's rows, a clipped line, is largest at one end of 1 to all the rows).
   */
  #wholeOnTime(view: QueueView, c: Costs): boolean {
    const n = view.queuedRows;
    const floor = Math.max(c.floor(1), c.floor(n));
    return view.now + Math.max(floor, c.mean(n) + c.k * c.std(n)) < this.#earliestDue(view);
  }

  /** The release reason of a batch not full: `timer` when it ends the wait begun for this queue. */
  #woke(view: QueueView): ReleaseReason {
    return this.#waitingUntil > -Infinity && view.now >= this.#waitingUntil && this.#waitingFor === view.oldestEnqueuedAt ? 'timer' : 'idle';
  }

  /** True when arrivals over the last `overloadMs` came faster than full batches can serve them. */
  #overloaded(view: QueueView, now: number): boolean {
    const m = this.latencyModel;
    return m.fit === 'line' && this.#arrivals.outran(now, ((view.inFlight + view.freeSlots) * view.maxBatchSize) / (m.predict(view.maxBatchSize) as number));
  }

  /**
   * The expected-gain window of waiting for one more arrival before releasing `rows` rows (see
   * the class notes), or 0 when no wait can pay: another batch runs (a busy model batches by
   * itself), patience is 0, the fixed cost is not learned or no arrival rate is measured. Leaves
   * the rate it measured in `#rate`.
   */
  #gainWindow(view: QueueView, rows: number): number {
    if (view.inFlight > 0 || this.#patience === 0) return 0;
    const m = this.latencyModel;
    const a = m.interceptMs;
    const perRow = m.perRowMs;
    const rate = (this.#rate = this.#arrivals.rate(view.now)); // rows per ms
    if (a === undefined || perRow === undefined || rate <= 0) return 0;
    return Math.max(0, a - rows * (perRow + 1 / rate));
  }

  /**
   * When to release the (single, not full) planned batch if waiting pays, or `undefined` to
   * release now. A time at or before `now` means a deadline forbids the wait the model wanted.
   */
  #waitUntil(view: QueueView, batch: PlannedBatch, c: Costs): number | undefined {
    const n = batch.rows;
    const gainWindow = this.#gainWindow(view, n);
    if (gainWindow <= 0) return undefined;
    const rate = this.#rate;
    // Counted from the newest arrival: with memoryless arrivals the same gain test would otherwise
    // pass again at every wake-up and a quiet spell would be waited out forever.
    let until = this.#newest + gainWindow * this.#patience;
    const cap = Math.min(this.#maxWaitMs, view.maxDelayMs > 0 ? view.maxDelayMs : Infinity);
    until = Math.min(until, view.oldestEnqueuedAt + cap);
    if (until <= view.now) return undefined;
    // The batch may grow while we wait; budget for the rows expected by then (at least one more).
    const expected = Math.min(view.maxBatchSize, n + Math.max(1, Math.ceil(rate * (until - view.now))));
    let due = Infinity;
    for (const it of batch.members) due = Math.min(due, it.due);
    const latest = due - c.mean(expected) - c.k * c.std(expected) - EPSILON_MS;
    if (latest < until) {
      if (latest <= view.now) return view.now;
      until = latest;
    }
    // A wait the timers cannot keep would cost more than it was planned to: release now.
    return until - view.now < this.#minWaitMs ? undefined : until;
  }

  /**
   * Reads the head of the queue with effective deadlines, shedding on the way (into `shed`) the
   * requests that cannot finish in time even if run alone right now (judged by the optimistic
   * floor; with nothing learned only requests already at their due time qualify). Stops once it
   * keeps `planBatches` full batches' rows: deeper requests are read when they come closer, so a
   * decision costs time in proportion to the plan, not to the backlog. (Reading the whole queue
   * cost 0.27 ms per decision at a 1,500-request backlog on a 3.4 ms batch, enough throughput lost
   * to keep the backlog growing.)
   */
  #scan(view: QueueView, c: Costs, shed: QueuedRequestInfo[]): Item[] {
    const now = view.now;
    const budget = view.maxLatencyMs;
    const margin = this.#marginMs;
    const horizon = this.#planBatches * view.maxBatchSize;
    const kept: Item[] = [];
    let rows = 0;
    let newest = -Infinity;
    for (const info of view.requests()) {
      const t = info.enqueuedAt;
      if (t > newest) newest = t;
      const due = Math.min(info.deadline, t + budget) - margin;
      if (now + c.floor(info.rows) >= due) {
        shed.push(info);
        this.#stats.shedAlone++;
        continue;
      }
      kept.push({ info, rows: info.rows, due });
      rows += info.rows;
      if (rows >= horizon) break;
    }
    this.#newest = newest;
    return kept;
  }
}

/** The shed list of a decision that sheds nothing (never written to). */
const NONE_SHED: QueuedRequestInfo[] = [];

/** Run-time estimates before anything is learned: greedy, and no shedding on a guess. */
const NOTHING_LEARNED: Costs = { mean: () => 0, std: () => 0, maxStd: () => 0, floor: () => 0, k: 0 };

/**
 * Makes an {@link AdaptivePolicy}; what `policy: 'adaptive'` uses. One instance per host.
 *
 * @example
 * ```ts
 * const host = new ModelHost(fn, { maxBatchSize: 32, maxLatencyMs: 50, policy: adaptivePolicy({ marginMs: 1 }) });
 * ```
 */
export function adaptivePolicy(options?: AdaptivePolicyOptions): AdaptivePolicy {
  return new AdaptivePolicy(options);
}

/**
 * A batch that ran this many times its predicted run time or more is taken as the first sign of a
 * slow spell, which the latency model follows a clipped step at a time: the next decision cuts no
 * batch short (see `smallerFirst`). With 10% jitter and no spell, about one batch in 200 runs so slow.
 */
const SLOW_BATCH = 1.3;

/**
 * Deadlines are exclusive (a host's timeout fires at its deadline, possibly before a batch ending at
 * the same instant delivers), so a planned wait stops this much short of one.
 */
const EPSILON_MS = 1e-3;
