import type { Handoff } from './adaptive-handoff';
import type { LatencyModel } from './latency-model';
import type { QueuedRequestInfo, QueueView } from './policy';

// The adaptive policy's plan of the queue: its shapes (read on every decision, so plain objects and
// arrays) and the functions that build it. @internal

export interface Item {
  readonly info: QueuedRequestInfo;
  readonly rows: number;
  /** Effective deadline: the earlier of its timeout and `enqueuedAt + maxLatencyMs`, minus the margin. */
  readonly due: number;
}

/** A batch slot in the plan: free from `at`, with the variance of the run times chained on it. */
export interface Slot {
  at: number;
  variance: number;
}

export interface PlannedBatch {
  rows: number;
  readonly members: Item[];
}

export interface Plan {
  readonly first: PlannedBatch;
  /** Requests the plan finishes at or after their due time, reserve included (beyond them nothing is planned). */
  readonly late: Item[];
  /** Those of them whose batch's mean end already reaches their due time: more likely late than not. */
  readonly likelyLate: Item[];
}

/** Mean and spread of a batch's run time, from what the model learned. */
export interface Costs {
  mean(rows: number): number;
  std(rows: number): number;
  /** The largest `std` of any batch of 1 to `rows` rows. */
  maxStd(rows: number): number;
  /** An optimistic run time: below it the model is not expected to go. */
  floor(rows: number): number;
  /** Standard deviations kept in reserve. */
  readonly k: number;
}

/** The costs `model` predicts once it learned something, each batch with the host's `handoff` around it. */
export function learnedCosts(model: LatencyModel, handoff: Handoff): Costs {
  return {
    mean: (rows) => (model.predict(rows) as number) + handoff.ms,
    std: (rows) => model.stdMs(rows) as number,
    maxStd: (rows) => model.maxStdMs(rows) as number,
    floor: (rows) => model.lower(rows) as number,
    k: model.k,
  };
}

/**
 * `c` with every run time `by` times slower (mean and spread; the optimistic floor kept): a slow
 * spell's prices, for a plan made while one is on.
 */
export function slowedBy(c: Costs, by: number): Costs {
  return { mean: (rows) => c.mean(rows) * by, std: (rows) => c.std(rows) * by, maxStd: (rows) => c.maxStd(rows) * by, floor: c.floor, k: c.k };
}

/**
 * Plans the kept requests in queue order: the first batch takes up to `firstRows` rows (stopping
 * at the first request that does not fit, as the queue does), later ones are full; each starts
 * on the slot that frees first. A request is late when its batch's chained mean end plus `k`
 * standard deviations of the chain reaches its due time. Plans `planBatches` full batches' rows.
 * `running`: the predicted ends of the batches running, in the order they end.
 */
export function planQueue(kept: readonly Item[], now: number, view: QueueView, c: Costs, firstRows: number, running: readonly Slot[], planBatches: number): Plan {
  const slots: Slot[] = [];
  for (let i = 1; i < view.freeSlots; i++) slots.push({ at: now, variance: 0 });
  for (const r of running) slots.push({ at: Math.max(now, r.at), variance: r.variance });
  const late: Item[] = [];
  const likelyLate: Item[] = [];
  const horizon = planBatches * view.maxBatchSize;
  let planned = 0;
  let slot: Slot = { at: now, variance: 0 };
  let limit = firstRows;
  let first: PlannedBatch | undefined;
  let i = 0;
  while (i < kept.length && planned < horizon) {
    const batch: PlannedBatch = { rows: 0, members: [] };
    for (; i < kept.length; i++) {
      const it = kept[i] as Item;
      if (batch.members.length > 0 && batch.rows + it.rows > limit) break;
      batch.rows += it.rows;
      batch.members.push(it);
    }
    first ??= batch;
    const sd = c.std(batch.rows);
    const end = slot.at + c.mean(batch.rows);
    const variance = slot.variance + sd * sd;
    const finish = end + c.k * Math.sqrt(variance);
    for (const it of batch.members) {
      if (finish < it.due) continue;
      late.push(it);
      if (end >= it.due) likelyLate.push(it);
    }
    planned += batch.rows;
    slots.push({ at: end, variance });
    slots.sort((x, y) => x.at - y.at);
    slot = slots.shift() as Slot;
    limit = view.maxBatchSize;
  }
  return { first: first as PlannedBatch, late, likelyLate };
}

/**
 * Counts the batches sent ahead of a free slot (which no decision released) as running, each full
 * (`fullRows`) after the one before it, until `running` holds `inFlight` of them.
 */
export function countAhead(running: Slot[], inFlight: number, now: number, c: Costs, fullRows: number): void {
  const sd = c.std(fullRows);
  let at = running.at(-1)?.at ?? now;
  while (running.length < inFlight) {
    at = Math.max(at, now) + c.mean(fullRows);
    running.push({ at, variance: sd * sd });
  }
}

/** Rows of the longest prefix of `batch` whose members all finish on time if it starts now. */
export function onTimeRows(batch: PlannedBatch, now: number, c: Costs): number {
  let rows = 0;
  let due = Infinity;
  for (const it of batch.members) {
    const r = rows + it.rows;
    const d = Math.min(due, it.due);
    if (rows > 0 && now + c.mean(r) + c.k * c.std(r) >= d) break;
    rows = r;
    due = d;
  }
  return rows;
}

/**
 * The smaller first batch to release in place of `plan`'s full one, or `undefined`: the longest
 * prefix whose members all end in time if it starts now, when the plan with it leaves fewer
 * requests late than `plan` (a short deadline at the head), not when the head is late anyway.
 *
 * The caller asks only where a cut's cost is one the plan sees. Not under sustained overload, nor
 * while the admission's overload holds: throughput is what is short, a smaller batch serves fewer
 * rows per millisecond, and the harm falls on requests the plan does not see (measured: cuts while
 * a backlog grew took a 95%-loaded MLP from full batches to 26-row ones; at an onset they came in
 * a cascade of 25, 19, 17, 9, 7, 3 and 1 rows). Not past what the plan read, nor with more than a
 * full batch queued: the model stays busy past this batch anyway, so a cut saves the head by
 * delaying every row behind it and every arrival until the backlog clears (simulated, 10 + 0.1·n
 * ms with 2× spells at 70% load, 30 seeds of 12 s: cuts of 31, 22, 13 and 2 rows in a spell, 0.52%
 * of requests missed against 0.42% without them; at 80% 1.32% against 1.07%). Not right after a
 * batch that ran far slower than predicted: that is a slow spell starting, which the latency
 * model follows a clipped step at a time, so the plan underprices the batch a cut adds and every
 * arrival waits behind it (simulated, 10 + 0.1·n ms, a 50 ms budget, 2× spells at 30% load, 10
 * seeds of 12 s: 46 of the 48 cuts came right after such a batch; 211 requests missed with them,
 * 108 without, greedy 78). Nor on a guess (one batch size seen): it scales run time in proportion
 * above that size, so to a model with a fixed cost any larger batch looks late (a 10 + 0.1·n ms
 * model at 150% load cut its second batch to 9 of 35 rows, a third of a batch lost per host start).
 */
export function smallerFirst(plan: Plan, kept: readonly Item[], now: number, view: QueueView, c: Costs, running: readonly Slot[], planBatches: number): PlannedBatch | undefined {
  if (plan.late.length === 0) return undefined;
  const rows = onTimeRows(plan.first, now, c);
  if (rows >= plan.first.rows) return undefined;
  const smaller = planQueue(kept, now, view, c, rows, running, planBatches);
  return smaller.late.length < plan.late.length ? smaller.first : undefined;
}

/**
 * True when no queued request can be late, by a bound on the plan: its batches all full-sized,
 * chained on the slot that frees last, each with the largest spread of any size, against `due`,
 * the earliest due time in the whole queue (a deadline loop over the queue's entries, where the
 * plan builds an item per request it reads: 16 µs a decision at a 256-request backlog, 32 µs at
 * 960).
 */
export function nobodyLate(view: QueueView, c: Costs, due: number, running: readonly Slot[], planBatches: number): boolean {
  const max = view.maxBatchSize;
  const rows = Math.min(view.queuedRows, planBatches * max);
  // Requests of several rows may leave batches short: packed in order, two neighbouring batches
  // always hold more than `max` rows, so there are at most 2·⌈rows / max⌉ of them.
  const batches = view.queuedRows === view.queuedRequests ? Math.ceil(rows / max) : Math.min(view.queuedRequests, 2 * Math.ceil(rows / max));
  let start = view.now;
  let variance = 0;
  for (const r of running) {
    if (r.at > start) start = r.at;
    if (r.variance > variance) variance = r.variance;
  }
  const sd = c.maxStd(max);
  return start + batches * c.mean(max) + c.k * Math.sqrt(variance + batches * sd * sd) < due;
}
