import type { RequestOutcome } from '../core/observer';
import type { CacheStats } from './response-cache';

/** Counters of a host, read with {@link ModelHost.stats}. */
export interface HostStats {
  /** Requests waiting in the queue. */
  readonly queued: number;
  /** Requests in batches that are running now (or sent ahead to an executor that holds them: see `Executor.batchesAhead`). */
  readonly running: number;
  /** Batches running now, counting those sent ahead to the executor. */
  readonly runningBatches: number;
  /** Batches released so far. */
  readonly batches: number;
  /** Requests that went into batches so far. */
  readonly requests: number;
  /** Rows that went into batches so far. */
  readonly rows: number;
  /** `rows / batches` (0 before the first batch). */
  readonly meanBatchSize: number;
  /** Requests rejected, by reason. */
  readonly rejected: {
    /** Refused because the queue held `maxQueueSize` requests. */
    readonly queueFull: number;
    /** Timed out (`timeoutMs`, `batchTimeoutMs`) or shed. */
    readonly deadline: number;
    /** Aborted through their `signal`. */
    readonly aborted: number;
    /** Refused or dropped because the host stopped. */
    readonly stopped: number;
    /** Rejected with an error from the model, the batcher, or a broken contract. */
    readonly error: number;
  };
  /** The response cache's counters (present only with the `cache` option). */
  readonly cache?: CacheStats;
}

/** The host's running totals; plain fields because they are bumped once per batch and per reject. @internal */
export class StatsCounters {
  batches = 0;
  requests = 0;
  rows = 0;
  readonly rejected = { queueFull: 0, deadline: 0, aborted: 0, stopped: 0, error: 0 };

  /** Counts one batch released with `requests` requests carrying `rows` rows. */
  batch(requests: number, rows: number): void {
    this.batches++;
    this.requests += requests;
    this.rows += rows;
  }

  /** Counts one request that ended without a value. */
  reject(outcome: RequestOutcome): void {
    const c = this.rejected;
    switch (outcome) {
      case 'queue-full':
        c.queueFull++;
        break;
      case 'timeout':
      case 'shed':
        c.deadline++;
        break;
      case 'aborted':
        c.aborted++;
        break;
      case 'stopped':
        c.stopped++;
        break;
      case 'error':
        c.error++;
        break;
      case 'ok':
        break;
    }
  }

  snapshot(queued: number, running: number, runningBatches: number): HostStats {
    return {
      queued,
      running,
      runningBatches,
      batches: this.batches,
      requests: this.requests,
      rows: this.rows,
      meanBatchSize: this.batches === 0 ? 0 : this.rows / this.batches,
      rejected: { ...this.rejected },
    };
  }
}
