import type * as PromClient from 'prom-client';
import { requireOptionalPeer } from '../core/optional-peer';
import { checkRegistry } from './registry';

const { Counter, Gauge } = requireOptionalPeer<typeof PromClient>('prom-client', 'microbatch/prometheus');

/** Options of {@link prometheusRedisMetrics}. */
export interface PrometheusRedisOptions {
  /** Where the metrics are registered (required, as for `prometheusMetrics`). */
  registry: PromClient.Registry;
  /**
   * Prefix of every metric name.
   * @default 'microbatch_redis_'
   */
  prefix?: string;
}

/**
 * A Redis replica or front end, as {@link PrometheusRedisMetrics.watch} reads it: anything with
 * numeric `stats` (a `RedisReplica` from `serveHostOnRedis`, a `RedisHostClient` from
 * `connectRedisHost`), so this module does not depend on the Redis client.
 */
export interface WatchedRedisSide {
  readonly stats: object;
}

/** What {@link prometheusRedisMetrics} returns. */
export interface PrometheusRedisMetrics {
  /**
   * Reports a replica's or a front end's counters at every scrape, labelled with `model` and
   * `role` (`replica` or `front_end`). Returns a function that stops reporting it.
   */
  watch(side: WatchedRedisSide, labels: { model: string; role: 'replica' | 'front_end' }): () => void;
}

/** stats field → metric: counters only grow; gauges are read as they are. */
const METRICS: ReadonlyArray<readonly [field: string, kind: 'counter' | 'gauge', name: string, help: string]> = [
  ['queueDepth', 'gauge', 'queue_depth', 'Requests in the stream not answered yet, over every front end (XLEN).'],
  ['lag', 'gauge', 'lag', 'Requests no replica has read yet: the signal to autoscale on.'],
  ['replicas', 'gauge', 'replicas', 'Replicas seen within claimIdleMs.'],
  ['inFlight', 'gauge', 'in_flight', 'Requests held now (sent and unanswered, or pulled and unanswered).'],
  ['sent', 'counter', 'sent_total', 'Requests a front end added to the stream.'],
  ['answered', 'counter', 'answered_total', 'Requests answered (a front end: answers received; a replica: answers written).'],
  ['duplicatesDropped', 'counter', 'duplicates_dropped_total', 'Answers a front end dropped: duplicates, or late after a timeout or abort.'],
  ['pulled', 'counter', 'pulled_total', 'Entries a replica read for the first time.'],
  ['reclaimed', 'counter', 'reclaimed_total', 'Entries a replica took over from a dead or stalled one.'],
  ['expired', 'counter', 'expired_total', 'Entries skipped because their deadline had passed (never run).'],
  ['poisoned', 'counter', 'poisoned_total', 'Entries answered with DeliveryLimitError after maxDeliveries.'],
  ['undecodable', 'counter', 'undecodable_total', 'Entries that did not decode.'],
  ['refused', 'counter', 'refused_total', 'Answers refused because another replica had taken the entry over.'],
];

/**
 * Prometheus metrics for `microbatch/redis` (queue depth, consumer-group lag, replicas alive,
 * deliveries, takeovers, poison answers, duplicates dropped), read from each side's `stats` when
 * scraped.
 *
 * @example
 * ```ts
 * const redisMetrics = prometheusRedisMetrics({ registry });
 * redisMetrics.watch(replica, { model: 'classifier', role: 'replica' });
 * redisMetrics.watch(frontEnd, { model: 'classifier', role: 'front_end' });
 * ```
 */
export function prometheusRedisMetrics(options: PrometheusRedisOptions): PrometheusRedisMetrics {
  const registry = checkRegistry('prometheusRedisMetrics', options?.registry);
  const prefix = options.prefix ?? 'microbatch_redis_';
  const sides = new Map<WatchedRedisSide, { model: string; role: string }>();
  for (const [field, kind, name, help] of METRICS) {
    const Metric = kind === 'counter' ? Counter : Gauge;
    new Metric({
      name: `${prefix}${name}`,
      help,
      labelNames: ['model', 'role'],
      registers: [registry],
      collect(this: PromClient.Counter | PromClient.Gauge) {
        this.reset(); // a side that is no longer watched must not keep its last value
        for (const [side, labels] of sides) {
          const value = (side.stats as Record<string, unknown>)[field];
          if (typeof value !== 'number') continue;
          if (this instanceof Counter) this.inc(labels, value);
          else (this as PromClient.Gauge).set(labels, value);
        }
      },
    } as PromClient.CounterConfiguration<string>);
  }
  return {
    watch(side, labels) {
      if (typeof side !== 'object' || side === null || typeof side.stats !== 'object') {
        throw new TypeError('prometheusRedisMetrics.watch: expected a replica or front end from microbatch/redis (an object with stats)');
      }
      sides.set(side, { model: labels.model, role: labels.role });
      return () => void sides.delete(side);
    },
  };
}
