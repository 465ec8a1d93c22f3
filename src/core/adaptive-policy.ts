import { LatencyModel, type LatencyModelOptions } from './latency-model';
import type { BatchOutcome, QueuedRequestInfo, QueueView, ReleaseDecision, ReleasePolicy, ReleaseReason } from './policy';

/** Options of {@link AdaptivePolicy}. */
export interface AdaptivePolicyOptions {
  /**
   * The run-time model to learn into, or options for a new one. Pass your own instance to share
   * what was learned with a later host (e.g. after a restart with the same model).
   * @default new LatencyModel()
   */
  latencyModel?: LatencyModel | LatencyModelOptions;
  /**
   * Longest predictive wait, counted from the oldest waiting request. The host's `maxDelayMs`,
   * when above 0, caps it too.
   * @default Infinity (the learned model and the deadlines decide)
   */
  maxWaitMs?: number;
  /**
   * Milliseconds kept in reserve on every deadline, for what the model does not time (merging,
   * splitting, event-loop lag). Raise it when answers arrive just past `maxLatencyMs`.
   * @default 0
   */
  marginMs?: number;
  /**
   * Fraction of the expected-gain wait (see {@link AdaptivePolicy}) actually waited, from 0 (never
   * wait, pure greedy) to 1. The full window minimises mean latency; in simulation half of it
   * kept the same mean and a tighter p99 tail.
   * @default 0.5
   */
  patience?: number;
  /**
   * Arrivals remembered to estimate the arrival rate that predictive waiting relies on.
   * @default 32
   */
  rateWindow?: number;
  /**
   * How many batches ahead the policy plans when checking that the queue can still be served on
   * time (deeper requests are checked once they come closer).
   * @default 8
   */
  planBatches?: number;
}

/** Counters of an {@link AdaptivePolicy}, for logs and tests. */
export interface AdaptiveStats {
  /** Requests shed because they could not finish in time even if run alone at once. */
  readonly shedAlone: number;
  /** Requests shed so that the requests behind them finish in time (overload). */
  readonly shedOverload: number;
  /** Times the policy chose to wait for a fuller batch while the model was idle. */
  readonly waits: number;
  /** Batches made smaller than the queue allowed because a deadline would otherwise be missed. */
  readonly deadlineLimited: number;
}

interface Item {
  readonly info: QueuedRequestInfo;
  readonly rows: number;
  /** Effective deadline: the earlier of its timeout and `enqueuedAt + maxLatencyMs`, minus the margin. */
  readonly due: number;
  /** Position in queue order. */
  readonly index: number;
}

interface PlannedBatch {
  start: number;
  rows: number;
  due: number;
  readonly members: Item[];
}

interface Plan {
  readonly batches: PlannedBatch[];
  /** The first request the plan cannot finish on time, if any. */
  readonly late: Item | undefined;
}

/**
 * The `'adaptive'` release policy: learns batch run time online ({@link LatencyModel}), sizes
 * every batch so that its earliest deadline is met, waits for a fuller batch only when the model
 * predicts that pays, and sheds requests that cannot be answered in time.
 *
 * Deadlines: a request's budget ends at the earlier of its `timeoutMs` and `enqueuedAt +
 * maxLatencyMs`. Before releasing, the policy plans the waiting queue (in queue order, batches back
 * to back, run times from the conservative {@link LatencyModel.upper}) and
 * - sheds a request that cannot finish in time even if run alone right now;
 * - under overload, when the plan shows a request behind would be late, sheds the request with the
 *   earliest deadline ahead of it (the classic rule for maximising on-time answers: one old request
 *   costs a small batch and makes everyone behind it late, which is how a latency-bounded batcher
 *   otherwise collapses to batches of one);
 * - releases the largest batch whose members all finish in time.
 *
 * Waiting: when the model is idle and the batch is not full, waiting `t` for the next arrival saves
 * that arrival a whole batch's fixed cost `a` but costs each of the `n` waiting rows `t`. With
 * Poisson arrivals at rate `λ` the expected gain is positive for waits up to
 * `a - n·(b + 1/λ)`; the policy waits `patience` times that, counted from the newest arrival
 * (re-deciding at every arrival), never past a
 * deadline, and not at all before it has learned `a` from two batch sizes. At low load `1/λ` is
 * large, so a lone request runs at once.
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

  /** Recent arrivals (time, rows), oldest first, at most `rateWindow`. */
  #arrivals: Array<{ t: number; rows: number }> = [];
  #seen = new WeakSet<object>();
  /** Predicted end times of the batches this policy released and the host still runs. */
  #running: number[] = [];
  #waitingUntil = -Infinity;
  /** The oldest request's enqueue time when the wait began (a wake-up only counts for that queue). */
  #waitingFor = NaN;
  /** Enqueue time of the newest waiting request at the last decision. */
  #newest = -Infinity;
  #stats = { shedAlone: 0, shedOverload: 0, waits: 0, deadlineLimited: 0 };

  /** @param options - see {@link AdaptivePolicyOptions}. */
  constructor(options: AdaptivePolicyOptions = {}) {
    const m = options.latencyModel;
    this.latencyModel = m instanceof LatencyModel ? m : new LatencyModel(m);
    this.#maxWaitMs = nonNegative('maxWaitMs', options.maxWaitMs ?? Infinity);
    this.#marginMs = nonNegative('marginMs', options.marginMs ?? 0);
    this.#rateWindow = Math.max(2, Math.floor(nonNegative('rateWindow', options.rateWindow ?? 32)));
    this.#planBatches = Math.max(1, Math.floor(nonNegative('planBatches', options.planBatches ?? 8)));
    this.#patience = Math.min(1, nonNegative('patience', options.patience ?? 0.5));
  }

  /** Counters of what the policy decided so far. */
  get stats(): AdaptiveStats {
    return { ...this.#stats };
  }

  /** Learns from every finished batch. */
  observe(outcome: BatchOutcome): void {
    this.#running.shift();
    this.latencyModel.observe(outcome);
  }

  decide(view: QueueView): ReleaseDecision {
    const now = view.now;
    const items = this.#scan(view);
    while (this.#running.length > view.inFlight) this.#running.shift();

    const { cost, floor } = this.#costs();
    const shed: QueuedRequestInfo[] = [];
    // Hard shedding: nothing can make these in time. With nothing learned yet (floor 0) only requests
    // already at their deadline qualify, so a cold host never sheds on a guess.
    let kept: Item[] = [];
    for (const it of items) {
      if (now + floor(it.rows) >= it.due) {
        shed.push(it.info);
        this.#stats.shedAlone++;
      } else kept.push(it);
    }
    if (kept.length === 0) return { release: false, shed };

    let plan = this.#plan(kept, now, view, cost);
    // Overload shedding trusts only a fitted line: the single-size fallback overestimates on purpose,
    // which is right for sizing a batch (a smaller batch teaches the slope) but not for rejecting anyone.
    if (plan.late !== undefined && this.latencyModel.interceptMs !== undefined) {
      // Overload: drop the earliest-deadline request planned up to the late one until the plan fits.
      const dropped = new Set<Item>();
      while (plan.late !== undefined) {
        const late = plan.late;
        let victim: Item = late;
        for (const b of plan.batches) for (const it of b.members) if (it.due < victim.due) victim = it;
        dropped.add(victim);
        kept = kept.filter((it) => it !== victim);
        if (kept.length === 0) break;
        plan = this.#plan(kept, now, view, cost);
      }
      // Rejected now rather than left to time out: the caller learns at once and can retry elsewhere.
      for (const it of dropped) {
        shed.push(it.info);
        this.#stats.shedOverload++;
      }
      if (kept.length === 0 || plan.batches[0] === undefined) return { release: false, shed };
    }

    const first = plan.batches[0] as PlannedBatch;
    const withShed = <D extends ReleaseDecision>(d: D): D => (shed.length > 0 ? { ...d, shed } : d);
    const release = (reason: ReleaseReason): ReleaseDecision => {
      this.#waitingUntil = -Infinity;
      this.#running.push(now + cost(first.rows));
      return withShed({ release: true, maxRows: first.rows, reason });
    };

    if (first.rows >= view.maxBatchSize) return release('full');
    if (plan.batches.length > 1) {
      // More waits than this batch takes: a deadline cut it if the next request would have fit.
      const next = plan.batches[1] as PlannedBatch;
      const cut = first.rows + (next.members[0] as Item).rows <= view.maxBatchSize;
      if (cut) this.#stats.deadlineLimited++;
      return release(cut ? 'deadline' : 'full');
    }

    const wakeAt = this.#waitUntil(view, first, cost);
    if (wakeAt === undefined) {
      const woke = this.#waitingUntil > -Infinity && now >= this.#waitingUntil && this.#waitingFor === view.oldestEnqueuedAt;
      return release(woke ? 'timer' : 'idle');
    }
    if (wakeAt <= now) return release('deadline');
    if (this.#waitingUntil === -Infinity) this.#stats.waits++;
    this.#waitingUntil = wakeAt;
    this.#waitingFor = view.oldestEnqueuedAt;
    return withShed({ release: false, wakeAt });
  }

  /**
   * Run-time estimates for decisions: `cost` (sizing and planning) must not be too low, `floor`
   * (shedding a request that cannot be met even alone) must not be too high. With a fitted line
   * both use the conservative upper estimate, so every request kept is one the plan can answer in
   * time. With one size `s` seen, a guess is neither allowed to shrink a batch (above `s` the cost
   * is taken as `t(s)`: the first larger batch is what teaches the slope) nor to shed (the floor
   * is the model's proportional lower bound). With nothing learned both are 0.
   */
  #costs(): { cost: (rows: number) => number; floor: (rows: number) => number } {
    const m = this.latencyModel;
    switch (m.fit) {
      case 'none':
        return { cost: () => 0, floor: () => 0 };
      case 'single-size': {
        const s = m.maxObservedRows;
        return { cost: (rows) => m.upper(Math.min(rows, s)) as number, floor: (rows) => m.lower(rows) as number };
      }
      case 'line': {
        const cost = (rows: number): number => m.upper(rows) as number;
        return { cost, floor: cost };
      }
    }
  }

  /**
   * When to release the (single, not full) planned batch if waiting pays, or `undefined` to
   * release now. A time at or before `now` means a deadline forbids the wait the model wanted.
   */
  #waitUntil(view: QueueView, batch: PlannedBatch, cost: (rows: number) => number): number | undefined {
    if (view.inFlight > 0) return undefined; // a busy model batches by itself: arrivals accumulate
    const m = this.latencyModel;
    const a = m.interceptMs;
    const perRow = m.perRowMs;
    const rate = this.#rate(view.now); // rows per ms
    if (a === undefined || perRow === undefined || rate <= 0) return undefined;
    const n = batch.rows;
    const gainWindow = a - n * (perRow + 1 / rate);
    if (gainWindow <= 0 || this.#patience === 0) return undefined;
    // Counted from the newest arrival: with memoryless arrivals the same gain test would otherwise
    // pass again at every wake-up and a quiet spell would be waited out forever.
    let until = this.#newest + gainWindow * this.#patience;
    const cap = Math.min(this.#maxWaitMs, view.maxDelayMs > 0 ? view.maxDelayMs : Infinity);
    until = Math.min(until, view.oldestEnqueuedAt + cap);
    if (until <= view.now) return undefined;
    // The batch may grow while we wait; budget for the rows expected by then (at least one more).
    const expected = Math.min(view.maxBatchSize, n + Math.max(1, Math.ceil(rate * (until - view.now))));
    const latest = batch.due - cost(expected) - EPSILON_MS;
    if (latest < until) return latest <= view.now ? view.now : latest;
    return until;
  }

  /**
   * Plans the kept requests in queue order: each batch grows while every member still finishes
   * by its due time, then the next batch starts when a slot frees. Stops after `planBatches`.
   */
  #plan(kept: readonly Item[], now: number, view: QueueView, cost: (rows: number) => number): Plan {
    // Slots: this free one now; the other free ones now; busy ones when their batch should end.
    const slots: number[] = [];
    for (let i = 1; i < view.freeSlots; i++) slots.push(now);
    for (const end of this.#running) slots.push(Math.max(now, end));
    const batches: PlannedBatch[] = [];
    let cur: PlannedBatch = { start: now, rows: 0, due: Infinity, members: [] };
    batches.push(cur);
    for (const it of kept) {
      const rows = cur.rows + it.rows;
      const due = Math.min(cur.due, it.due);
      // A batch's first member always joins: it passed the shedding test (the single-size floor can
      // admit a request the cost bound would not fit), and an empty batch would release nothing.
      if (cur.members.length === 0 || (rows <= view.maxBatchSize && cur.start + cost(rows) < due)) {
        cur.rows = rows;
        cur.due = due;
        cur.members.push(it);
        continue;
      }
      if (batches.length >= this.#planBatches) break;
      slots.push(cur.start + cost(cur.rows));
      slots.sort((x, y) => x - y);
      const start = slots.shift() as number;
      cur = { start, rows: it.rows, due: it.due, members: [it] };
      batches.push(cur);
      if (start + cost(it.rows) >= it.due) return { batches, late: it };
    }
    return { batches, late: undefined };
  }

  /** Materialises the queue with effective deadlines, and records new arrivals for the rate. */
  #scan(view: QueueView): Item[] {
    const budget = view.maxLatencyMs;
    const margin = this.#marginMs;
    const items: Item[] = [];
    let index = 0;
    this.#newest = -Infinity;
    for (const info of view.requests()) {
      if (info.enqueuedAt > this.#newest) this.#newest = info.enqueuedAt;
      const due = Math.min(info.deadline, info.enqueuedAt + budget) - margin;
      items.push({ info, rows: info.rows, due, index: index++ });
      if (!this.#seen.has(info)) {
        this.#seen.add(info);
        this.#arrivals.push({ t: info.enqueuedAt, rows: info.rows });
      }
    }
    if (this.#arrivals.length > this.#rateWindow) this.#arrivals.splice(0, this.#arrivals.length - this.#rateWindow);
    return items;
  }

  /**
   * Arrival rate in rows per millisecond over the remembered arrivals, measured up to `now` so
   * that it decays during a quiet spell (an idle host forgets an old burst).
   */
  #rate(now: number): number {
    const a = this.#arrivals;
    if (a.length < 2) return 0;
    let first = Infinity;
    let rows = 0;
    for (const x of a) first = Math.min(first, x.t);
    for (const x of a) if (x.t > first) rows += x.rows;
    const span = now - first;
    return span > 0 ? rows / span : 0;
  }
}

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
 * Deadlines are exclusive (a host's timeout fires at its deadline, possibly before a batch ending at
 * the same instant delivers), so a planned wait stops this much short of one.
 */
const EPSILON_MS = 1e-3;

function nonNegative(key: string, value: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`AdaptivePolicy: expected \`${key}\` to be a number >= 0, got ${String(value)}`);
  }
  return value;
}
