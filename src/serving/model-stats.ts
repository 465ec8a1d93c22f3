import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, type BatchEvent, type RequestEvent } from '../core/observer';
import type { Servable } from '../core/servable';

/** A count and the nanoseconds summed over it (Triton's duration statistic). */
export interface StatDuration {
  count: number;
  ns: number;
}

/** The per-batch-size statistics of one model. */
export interface BatchSizeStats {
  /** Rows in the batch. */
  readonly batch_size: number;
  /** Merging the requests' inputs: one count per execution. */
  readonly compute_input: StatDuration;
  /** Running the model. */
  readonly compute_infer: StatDuration;
  /** Splitting the outputs back to the requests. */
  readonly compute_output: StatDuration;
}

/** One model's statistics in Triton's statistics-extension shape. */
export interface ModelStatistics {
  readonly name: string;
  readonly version: string;
  /** When the last request ended, in milliseconds since the epoch (0: never). */
  readonly last_inference: number;
  /** Rows inferred successfully (Triton counts batch items). */
  readonly inference_count: number;
  /** Successful model executions: batches with at least one answered request. */
  readonly execution_count: number;
  readonly inference_stats: {
    /** Requests answered, with their whole time. */
    readonly success: StatDuration;
    /** Requests that failed (model error, time-out, refusal, abort...), with their whole time. */
    readonly fail: StatDuration;
    /** Time requests waited in the queue before their batch ran. */
    readonly queue: StatDuration;
    readonly compute_input: StatDuration;
    readonly compute_infer: StatDuration;
    readonly compute_output: StatDuration;
    /**
     * Requests a host with `cache: true` answered without computing them: from a kept result, or
     * by joining the same input's computation (its `stats.cache` `hits + shared`). `ns` is 0: a
     * lookup is not timed. Zero for a host without a cache.
     */
    readonly cache_hit: StatDuration;
    /** Requests a host with `cache: true` computed (its `stats.cache.misses`); `ns` is 0, as for `cache_hit`. */
    readonly cache_miss: StatDuration;
  };
  readonly batch_stats: readonly BatchSizeStats[];
}

const NS_PER_MS = 1e6;
const zero = (): StatDuration => ({ count: 0, ns: 0 });

function add(d: StatDuration, count: number, ms: number): void {
  d.count += count;
  d.ns += Math.round(ms * NS_PER_MS);
}

interface Mutable {
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: { success: StatDuration; fail: StatDuration; queue: StatDuration; compute_input: StatDuration; compute_infer: StatDuration; compute_output: StatDuration };
  batches: Map<number, { compute_input: StatDuration; compute_infer: StatDuration; compute_output: StatDuration }>;
}

/**
 * Collects Triton-style statistics from what every host publishes on `node:diagnostics_channel`
 * (the same batch and request events the observers get), keyed by host name: no host option is
 * needed, and hosts built before the server count from the server's start.
 * @internal
 */
export class StatsCollector {
  readonly #byHost = new Map<string, Mutable>();
  readonly #onBatch = (message: unknown): void => this.#batch(message as BatchEvent);
  readonly #onRequest = (message: unknown): void => this.#request(message as RequestEvent);
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
    subscribe(CHANNELS.batch, this.#onBatch);
    subscribe(CHANNELS.request, this.#onRequest);
    subscribe(CHANNELS.refused, this.#onRequest);
  }

  /** Stops collecting. */
  close(): void {
    unsubscribe(CHANNELS.batch, this.#onBatch);
    unsubscribe(CHANNELS.request, this.#onRequest);
    unsubscribe(CHANNELS.refused, this.#onRequest);
  }

  /** The statistics of `host` (its events are keyed by its `name`; its cache counts are in its `stats`), reported under the served `name`. */
  stats(name: string, version: string, host: Pick<Servable, 'name' | 'stats'>): ModelStatistics {
    const s = host.name === undefined ? undefined : this.#byHost.get(host.name);
    const cache = host.stats?.cache;
    const i = s?.inference_stats;
    return {
      name,
      version,
      last_inference: s?.last_inference ?? 0,
      inference_count: s?.inference_count ?? 0,
      execution_count: s?.execution_count ?? 0,
      inference_stats: {
        success: { ...(i?.success ?? zero()) },
        fail: { ...(i?.fail ?? zero()) },
        queue: { ...(i?.queue ?? zero()) },
        compute_input: { ...(i?.compute_input ?? zero()) },
        compute_infer: { ...(i?.compute_infer ?? zero()) },
        compute_output: { ...(i?.compute_output ?? zero()) },
        cache_hit: { count: cache === undefined ? 0 : cache.hits + cache.shared, ns: 0 },
        cache_miss: { count: cache?.misses ?? 0, ns: 0 },
      },
      batch_stats: [...(s?.batches ?? new Map<number, never>())]
        .sort(([a], [b]) => a - b)
        .map(([size, b]) => ({ batch_size: size, compute_input: { ...b.compute_input }, compute_infer: { ...b.compute_infer }, compute_output: { ...b.compute_output } })),
    };
  }

  #entry(host: string): Mutable {
    let s = this.#byHost.get(host);
    if (s === undefined) {
      s = {
        last_inference: 0,
        inference_count: 0,
        execution_count: 0,
        inference_stats: { success: zero(), fail: zero(), queue: zero(), compute_input: zero(), compute_infer: zero(), compute_output: zero() },
        batches: new Map(),
      };
      this.#byHost.set(host, s);
    }
    return s;
  }

  #batch(e: BatchEvent): void {
    // Triton counts successful executions only; a batch the model threw on is in `fail`.
    if (e.succeeded === 0) return;
    const s = this.#entry(e.host);
    s.execution_count++;
    // Per request in inference_stats (each request spent the batch's phases), per execution in batch_stats.
    add(s.inference_stats.compute_input, e.requests, e.mergeMs * e.requests);
    add(s.inference_stats.compute_infer, e.requests, e.runMs * e.requests);
    add(s.inference_stats.compute_output, e.requests, e.splitMs * e.requests);
    let b = s.batches.get(e.rows);
    if (b === undefined) s.batches.set(e.rows, (b = { compute_input: zero(), compute_infer: zero(), compute_output: zero() }));
    add(b.compute_input, 1, e.mergeMs);
    add(b.compute_infer, 1, e.runMs);
    add(b.compute_output, 1, e.splitMs);
  }

  #request(e: RequestEvent): void {
    const s = this.#entry(e.host);
    s.last_inference = this.#now();
    if (e.outcome === 'ok') {
      s.inference_count += e.rows;
      add(s.inference_stats.success, 1, e.totalMs);
    } else add(s.inference_stats.fail, 1, e.totalMs);
    if (e.runMs > 0 || e.outcome === 'ok') add(s.inference_stats.queue, 1, e.queueMs);
  }
}
