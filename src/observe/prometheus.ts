/**
 * Prometheus metrics for microbatch hosts, through `prom-client` (an optional peer dependency,
 * imported only by this subpath: `microbatch/prometheus`).
 * @packageDocumentation
 * @module microbatch/prometheus
 */
import type * as PromClient from 'prom-client';
import { requireOptionalPeer } from '../core/optional-peer';
import type { HostObserver } from '../core/observer';
import type { GenerationObserver } from '../generate/events';
import { batchSizeBuckets, HostSet, SECONDS_BUCKETS, TOKENS_PER_SECOND_BUCKETS } from './common';
import type { ServableWith } from '../core/servable';
import { checkRegistry } from './registry';

// prom-client is an optional peer: loaded when this subpath is imported, with a message naming it if absent.
const { Counter, Gauge, Histogram } = requireOptionalPeer<typeof PromClient>('prom-client', 'microbatch/prometheus');

/** Options of {@link prometheusMetrics}. */
export interface PrometheusOptions {
  /**
   * Where the metrics are registered. Required: a library must not write into prom-client's global
   * registry behind your back. Pass `register` (prom-client's default) explicitly if you want it.
   */
  registry: PromClient.Registry;
  /**
   * Largest `maxBatchSize` of the hosts you will watch: the batch size histogram's buckets are
   * powers of two up to it, plus it.
   * @default 128
   */
  maxBatchSize?: number;
  /**
   * Prefix of every metric name.
   * @default 'microbatch_'
   */
  prefix?: string;
  /**
   * Bucket bounds in seconds for the queue wait, run time and request latency histograms.
   * @default 0.5 ms to 10 s, 14 buckets
   */
  secondsBuckets?: readonly number[];
}

/** What {@link prometheusMetrics} returns. */
export interface PrometheusMetrics {
  /**
   * Pass as a host's `observer` (or through `combineObservers`), or a `GenerationHost`'s; one
   * serves any number of hosts.
   */
  readonly observer: HostObserver & GenerationObserver;
  /**
   * Reports a host's queue depth and batches in flight at every scrape. Returns a function that
   * stops (call it after `host.stop()` so a stopped host's series disappear).
   */
  watch(host: ServableWith<'name' | 'stats' | 'options'>): () => void;
}

/**
 * Creates the microbatch metrics in `registry` (once per registry: prom-client rejects duplicate
 * names). Every series has a `host` label (the host's `name`).
 *
 * | metric | type | labels |
 * | --- | --- | --- |
 * | `microbatch_batch_size` | histogram of rows per batch | host |
 * | `microbatch_batches_total` | counter of batches | host, reason (`full`, `idle`, `timer`, `deadline`, `drain`, `warmup`) |
 * | `microbatch_queue_wait_seconds` | histogram, per request, enqueue to batch start | host |
 * | `microbatch_run_seconds` | histogram, per batch, time in the batch function | host |
 * | `microbatch_request_duration_seconds` | histogram, per answered request, enqueue to answer | host |
 * | `microbatch_requests_total` | counter; `queue-full` includes the HTTP server's `maxConcurrentRequests` refusals for watched hosts | host, outcome (`ok`, `error`, `timeout`, `aborted`, `queue-full`, `stopped`, `shed`) |
 * | `microbatch_transport_requests_total` | counter of inference calls a serving core admitted for a watched host | host, transport (`http`, `grpc`) |
 * | `microbatch_padding_waste_ratio` | histogram, per batch, padded fraction | host |
 * | `microbatch_queue_depth` | gauge, read from `host.stats` at scrape | host |
 * | `microbatch_batches_in_flight` | gauge, read at scrape | host |
 * | `microbatch_max_batch_size` | gauge, read at scrape | host |
 * | `microbatch_cache_requests_total` | counter, read at scrape (hosts with `cache`) | host, result (`hit`, `shared`, `miss`) |
 * | `microbatch_cache_entries` | gauge, read at scrape (hosts with `cache`) | host |
 * | `microbatch_generation_steps_total` | counter of decode steps (a `GenerationHost`) | host |
 * | `microbatch_generation_step_rows` | histogram of sequences per step | host |
 * | `microbatch_generation_step_seconds` | histogram, time per step | host |
 * | `microbatch_generation_tokens_total` | counter of generated tokens | host |
 * | `microbatch_generation_sequences_total` | counter of ended sequences | host, outcome (`stop`, `length`, `cancelled`, `error`, `timeout`, `aborted`, `queue-full`, `stopped`) |
 * | `microbatch_time_to_first_token_seconds` | histogram, `generate()` to the first token | host |
 * | `microbatch_generation_tokens_per_second` | histogram, per sequence, decode speed after its first token | host |
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * import { prometheusMetrics } from 'microbatch/prometheus';
 *
 * const registry = new Registry();
 * const prom = prometheusMetrics({ registry, maxBatchSize: 32 });
 * const host = new ModelHost(fn, { name: 'classifier', maxBatchSize: 32, observer: prom.observer });
 * prom.watch(host);
 * app.get('/metrics', async (_req, res) => res.type(registry.contentType).send(await registry.metrics()));
 * ```
 */
export function prometheusMetrics(options: PrometheusOptions): PrometheusMetrics {
  const registry = checkRegistry('prometheusMetrics', options?.registry);
  const p = options.prefix ?? 'microbatch_';
  const registers = [registry];
  const seconds = [...(options.secondsBuckets ?? SECONDS_BUCKETS)];
  // Requests a transport refused for a watched host before it saw them count as its own refusals.
  const hosts = new HostSet(
    (e) => requests.inc({ host: e.host, outcome: e.outcome }),
    (e) => byTransport.inc({ host: e.host, transport: e.transport }),
  );
  const rowBuckets = batchSizeBuckets(options.maxBatchSize ?? 128);

  const batchSize = new Histogram({ name: `${p}batch_size`, help: 'Rows per released batch.', labelNames: ['host'], buckets: [...rowBuckets], registers });
  const batches = new Counter({ name: `${p}batches_total`, help: 'Batches released, by why they were released.', labelNames: ['host', 'reason'], registers });
  const queueWait = new Histogram({ name: `${p}queue_wait_seconds`, help: 'Time from inference() until the request left the queue.', labelNames: ['host'], buckets: seconds, registers });
  const run = new Histogram({ name: `${p}run_seconds`, help: 'Time a batch spent in the batch function.', labelNames: ['host'], buckets: seconds, registers });
  const duration = new Histogram({ name: `${p}request_duration_seconds`, help: 'Time from inference() to the answer, answered requests only.', labelNames: ['host'], buckets: seconds, registers });
  const requests = new Counter({ name: `${p}requests_total`, help: 'Requests settled, by outcome.', labelNames: ['host', 'outcome'], registers });
  const byTransport = new Counter({ name: `${p}transport_requests_total`, help: 'Inference calls a server admitted for the host, by transport (http, grpc).', labelNames: ['host', 'transport'], registers });
  const padding = new Histogram({ name: `${p}padding_waste_ratio`, help: 'Fraction of a batch that was padding.', labelNames: ['host'], buckets: [0, 0.1, 0.25, 0.5, 0.75, 1], registers });
  const steps = new Counter({ name: `${p}generation_steps_total`, help: 'Decode steps run by a generation host.', labelNames: ['host'], registers });
  const stepRows = new Histogram({ name: `${p}generation_step_rows`, help: 'Sequences per decode step.', labelNames: ['host'], buckets: [...rowBuckets], registers });
  const stepTime = new Histogram({ name: `${p}generation_step_seconds`, help: 'Time per decode step (merge, step function, split).', labelNames: ['host'], buckets: seconds, registers });
  const tokens = new Counter({ name: `${p}generation_tokens_total`, help: 'Tokens generated.', labelNames: ['host'], registers });
  const sequences = new Counter({ name: `${p}generation_sequences_total`, help: 'Generated sequences ended, by outcome.', labelNames: ['host', 'outcome'], registers });
  const ttft = new Histogram({ name: `${p}time_to_first_token_seconds`, help: 'Time from generate() to the first token.', labelNames: ['host'], buckets: seconds, registers });
  const tokenRate = new Histogram({
    name: `${p}generation_tokens_per_second`,
    help: 'Per sequence, tokens per second after its first token.',
    labelNames: ['host'],
    buckets: [...TOKENS_PER_SECOND_BUCKETS],
    registers,
  });
  // Gauges read the hosts when scraped, so they are exact at scrape time and cost nothing between scrapes.
  gauge(`${p}queue_depth`, 'Requests waiting in the queue.', (h) => h.stats.queued);
  gauge(`${p}batches_in_flight`, 'Batches running now.', (h) => h.stats.runningBatches ?? 0);
  gauge(`${p}max_batch_size`, 'The host\'s current maxBatchSize.', (h) => h.options.maxBatchSize);
  // The cache's counts live in host.stats (hits never reach the observer: they never queue).
  new Counter({
    name: `${p}cache_requests_total`,
    help: 'Requests the response cache answered from a kept result (hit), from a computation already waiting or running (shared), or computed (miss).',
    labelNames: ['host', 'result'],
    registers,
    collect() {
      this.reset();
      for (const h of hosts) {
        const c = h.stats.cache;
        if (c === undefined) continue;
        this.inc({ host: h.name, result: 'hit' }, c.hits);
        this.inc({ host: h.name, result: 'shared' }, c.shared);
        this.inc({ host: h.name, result: 'miss' }, c.misses);
      }
    },
  });
  new Gauge({
    name: `${p}cache_entries`,
    help: 'Finished results the response cache keeps now.',
    labelNames: ['host'],
    registers,
    collect() {
      this.reset();
      for (const h of hosts) if (h.stats.cache !== undefined) this.set({ host: h.name }, h.stats.cache.size);
    },
  });

  function gauge(name: string, help: string, read: (h: ServableWith<'name' | 'stats' | 'options'>) => number): void {
    new Gauge({
      name,
      help,
      labelNames: ['host'],
      registers,
      collect() {
        this.reset(); // a host that was unwatched must not keep its last value forever
        for (const h of hosts) this.set({ host: h.name }, read(h));
      },
    });
  }

  return {
    observer: {
      onBatch(e) {
        const host = { host: e.host };
        batchSize.observe(host, e.rows);
        batches.inc({ host: e.host, reason: e.reason });
        run.observe(host, e.runMs / 1000);
        padding.observe(host, e.paddingWaste);
      },
      onRequest(e) {
        requests.inc({ host: e.host, outcome: e.outcome });
        // Refusals (queue full, stopped, bad options) never queued and report 0 rows; a 0 wait
        // from them would drag the histogram down.
        if (e.rows === 0) return;
        queueWait.observe({ host: e.host }, e.queueMs / 1000);
        if (e.outcome === 'ok') duration.observe({ host: e.host }, e.totalMs / 1000);
      },
      onStep(e) {
        const host = { host: e.host };
        steps.inc(host);
        stepRows.observe(host, e.sequences);
        stepTime.observe(host, e.runMs / 1000);
        tokens.inc(host, e.tokens);
      },
      onSequence(e) {
        const host = { host: e.host };
        sequences.inc({ host: e.host, outcome: e.outcome });
        if (e.tokens > 0) ttft.observe(host, e.timeToFirstTokenMs / 1000);
        if (e.tokensPerSecond > 0) tokenRate.observe(host, e.tokensPerSecond); // 0: fewer than two tokens, nothing to rate
      },
    },
    watch: (host) => hosts.add(host),
  };
}

export { prometheusRedisMetrics } from './prometheus-redis';
export type { PrometheusRedisMetrics, PrometheusRedisOptions, WatchedRedisSide } from './prometheus-redis';
