import type { ServableWith } from '../../core/servable';
import type { RedisOptions } from './common';

/**
 * What {@link serveHostOnRedis} serves: a `Servable` with `inference()`, `stats` and `options`,
 * from which the replica computes how much work it can start now (`runningBatches` and
 * `maxConcurrentBatches` count when present, as on a `ModelHost`; without them, one batch at a
 * time). Its `model`, when present, is published for front ends that serve HTTP (a host from
 * `microbatch/onnx` has it).
 * @deprecated Use `Servable` (from `microbatch`): `serveHostOnRedis` takes a
 * `ServableWith<'inference' | 'stats' | 'options'>`.
 *
 * @example
 * ```ts
 * const target: ServableWith<'inference' | 'stats' | 'options'> = await createOnnxHost('model.onnx', { maxBatchSize: 32 });
 * ```
 */
export type RedisServable = ServableWith<'inference' | 'stats' | 'options'>;

/**
 * Options of {@link serveHostOnRedis}.
 *
 * @example
 * ```ts
 * const options: ServeHostOnRedisOptions = { url: 'redis://10.0.0.5:6379', model: 'classifier', claimIdleMs: 10_000 };
 * ```
 */
export interface ServeHostOnRedisOptions extends RedisOptions {
  /**
   * This replica's name in the group (letters, digits, `_`, `-`).
   * @default hostname, pid and a random suffix
   */
  consumer?: string;
  /**
   * Deliveries after which an entry that never got an answer is answered with
   * {@link DeliveryLimitError} instead of being run again (a poison input).
   * @default 3
   */
  maxDeliveries?: number;
  /**
   * How long one blocking read waits for new entries before the replica looks around again.
   * @default 1000
   */
  blockMs?: number;
  /**
   * How long a front end's reply stream outlives its last reply: the reply streams of front ends
   * that are gone expire after this.
   * @default 60000
   */
  replyTtlMs?: number;
  /**
   * How old a replica's heartbeat may grow before the other replicas count it dead and take its
   * entries over (it refreshes it every quarter of this, from its event loop). A living replica
   * running a slow batch keeps its heartbeat and its entries; an event-loop stall this long (a
   * model run inline that blocks it, a frozen process) looks like death: its entries run again
   * elsewhere and its late answers are refused. Keep it well under your callers' timeout.
   * @default 2000
   */
  heartbeatTtlMs?: number;
  /**
   * Called each time this replica takes over from a dead replica (or from entries idle past
   * `claimIdleMs`): what it claimed, what it cleared, whether the dead replica left the group. Log
   * it; an exception it throws is ignored.
   * @default none (the takeover is only counted in `stats.takeovers`)
   * @example
   * ```ts
   * const onTakeover = (t: RedisTakeover) => console.warn(`took over ${t.claimed.length} entries from ${t.from} (${t.reason}), cleared ${t.cleared}`);
   * ```
   */
  onTakeover?: (takeover: RedisTakeover) => void;
}

/**
 * One takeover, reported to {@link ServeHostOnRedisOptions.onTakeover}.
 *
 * @example
 * ```ts
 * const t: RedisTakeover = { from: 'replica-a', reason: 'heartbeat', claimed: ['1700000000000-0'], cleared: 2, removed: false };
 * ```
 */
export interface RedisTakeover {
  /** The consumer (replica) whose entries were taken over. */
  readonly from: string;
  /** `'heartbeat'`: its heartbeat expired (it died or froze); `'idle'`: an entry sat past `claimIdleMs`. */
  readonly reason: 'heartbeat' | 'idle';
  /** Ids of the entries this replica claimed to run (one at a time). */
  readonly claimed: readonly string[];
  /** Entries acknowledged and deleted without running: their caller is gone (deadline passed, or withdrawn). */
  readonly cleared: number;
  /** True when the dead replica, left with nothing pending, was removed from the consumer group. */
  readonly removed: boolean;
}


/** Counters of a replica, read with {@link RedisReplica.stats}. */
export interface RedisReplicaStats {
  /** Entries read from the stream for the first time. */
  readonly pulled: number;
  /** Entries taken over from a replica that died or stalled. */
  readonly reclaimed: number;
  /** Entries answered (with a result or an error). */
  readonly answered: number;
  /** Entries running or waiting in the host now. */
  readonly inFlight: number;
  /** Entries skipped because their deadline had passed when they were read (never run). */
  readonly expired: number;
  /** Entries answered with {@link DeliveryLimitError}. */
  readonly poisoned: number;
  /** Entries that did not decode (answered with an error when they named a reply stream). */
  readonly undecodable: number;
  /** Answers refused because another replica had taken the entry over meanwhile. */
  readonly refused: number;
  /** Takeovers from dead replicas (or of entries idle past `claimIdleMs`), each reported to `onTakeover`. */
  readonly takeovers: number;
  /** Entries of dead replicas retired without running because their caller was gone. */
  readonly cleared: number;
}

/** A replica serving a host from Redis, from {@link serveHostOnRedis}. */
export interface RedisReplica {
  /** This replica's consumer name in the group. */
  readonly consumer: string;
  /** Counters. */
  readonly stats: RedisReplicaStats;
  /**
   * Stops pulling, waits (at most `graceMs`) for the answers to the entries it holds, and leaves the
   * group. Entries it could not answer in time stay pending and are taken over by another replica.
   * Does not stop the host, which belongs to the caller. Idempotent.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}
