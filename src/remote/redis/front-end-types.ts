import type { ModelSignature, TensorSignature } from '../../core/servable';
import type { RedisOptions } from './common';

/**
 * Options of {@link connectRedisHost}.
 *
 * @example
 * ```ts
 * const options: ConnectRedisHostOptions = { url: 'redis://10.0.0.5:6379', model: 'classifier', timeoutMs: 2_000 };
 * ```
 */
export interface ConnectRedisHostOptions extends RedisOptions {
  /**
   * Default per-request time limit (each call may override it). The caller is answered at once
   * when it passes; a replica skips the request if it has not run it yet, judged by the Redis
   * server's clock. `Infinity` means none.
   * @default Infinity
   */
  timeoutMs?: number;
}


/** Counters of a front end, read with {@link RedisHostClient.stats}. */
export interface RedisHostClientStats {
  /** Requests added to the stream. */
  readonly sent: number;
  /** Requests answered by a replica. */
  readonly answered: number;
  /** Requests waiting for an answer now. */
  readonly inFlight: number;
  /**
   * The same as `inFlight`, under the name every host's stats use: a front end cannot tell which of
   * its requests a replica has started, so it counts them all as queued.
   */
  readonly queued: number;
  /** Always 0, for the same reason (the replicas' own stats say what runs). */
  readonly running: number;
  /** Answers dropped because their caller was already answered (a duplicate, or late after a timeout or abort). */
  readonly duplicatesDropped: number;
  /** Requests in the stream not yet answered, over every front end (`XLEN`), as last polled. */
  readonly queueDepth: number;
  /** Requests no replica has read yet (the group's lag): the signal to autoscale on, as last polled. */
  readonly lag: number;
  /** Replicas seen within `claimIdleMs`, as last polled. */
  readonly replicas: number;
}

/**
 * One input or output of a model, as a replica publishes it.
 * @deprecated Use `TensorSignature` (from `microbatch`), the one tensor-signature type.
 */
export type PublishedTensor = TensorSignature;

/**
 * A model's inputs and outputs, as a replica publishes them for front ends that serve HTTP.
 * @deprecated Use `ModelSignature` (from `microbatch`).
 */
export type PublishedModel = ModelSignature;
