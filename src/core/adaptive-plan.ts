import type { QueuedRequestInfo } from './policy';

// The shapes the adaptive policy plans with (see AdaptivePolicy's #plan): read on every decision,
// so they are plain objects and arrays. @internal

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
