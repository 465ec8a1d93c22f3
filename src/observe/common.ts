import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe } from '../core/describe';
import { CHANNELS, type RequestEvent, type TransportEvent } from '../core/observer';
import { isServableWith, type ServableWith } from '../core/servable';

/**
 * What the metric adapters read from a host at scrape time: a `Servable` with its `name` (the
 * `host` label), `stats` (`queued` and `runningBatches` become gauges, `cache` the cache metrics)
 * and `options` (`maxBatchSize` is shown as a gauge so dashboards can draw the fill ratio); any
 * `ModelHost` fits.
 * @deprecated Use `Servable` (from `microbatch`): `watch()` takes a `ServableWith<'name' | 'stats' | 'options'>`.
 */
export type WatchedHost = ServableWith<'name' | 'stats' | 'options'>;

/**
 * Batch size bucket bounds: powers of two below `maxBatchSize`, then `maxBatchSize` itself, so
 * that "full" batches land in their own bucket (1, 2, 4, 8, 16, 24 for a maximum of 24).
 */
export function batchSizeBuckets(maxBatchSize: number): number[] {
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) {
    throw new RangeError(`microbatch metrics: expected \`maxBatchSize\` to be an integer from 1 and up, got ${String(maxBatchSize)}`);
  }
  const out: number[] = [];
  for (let b = 1; b < maxBatchSize; b *= 2) out.push(b);
  out.push(maxBatchSize);
  return out;
}

/** Default bounds, in seconds, for queue wait, run time and request latency: 0.5 ms to 10 s. */
export const SECONDS_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Bounds, in tokens per second, for a generated sequence's decode speed. */
export const TOKENS_PER_SECOND_BUCKETS: readonly number[] = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];

/**
 * Keeps the set of watched hosts; `watch()` returns its own undo. While it holds any, the requests
 * a transport refused for one of them before it saw them (`CHANNELS.refused`: the HTTP server's
 * `maxConcurrentRequests`) go to `onRefused`, so that an adapter counts them with the host's own.
 */
export class HostSet {
  readonly #hosts = new Set<ServableWith<'name' | 'stats' | 'options'>>();
  readonly #onRefused: ((e: RequestEvent) => void) | undefined;
  readonly #onTransport: ((e: TransportEvent) => void) | undefined;
  readonly #listener = (message: unknown): void => {
    const e = message as RequestEvent;
    if (this.#watches(e.host)) this.#onRefused?.(e);
  };
  readonly #transportListener = (message: unknown): void => {
    const e = message as TransportEvent;
    if (this.#watches(e.host)) this.#onTransport?.(e);
  };

  constructor(onRefused?: (e: RequestEvent) => void, onTransport?: (e: TransportEvent) => void) {
    this.#onRefused = onRefused;
    this.#onTransport = onTransport;
  }

  #watches(name: string): boolean {
    for (const h of this.#hosts) if (h.name === name) return true;
    return false;
  }

  add(host: ServableWith<'name' | 'stats' | 'options'>): () => void {
    if (!isServableWith(host, ['name', 'stats'])) {
      throw new TypeError(`microbatch metrics: watch(host) expects a ModelHost (an object with name and stats); got ${describe(host)}`);
    }
    if (this.#hosts.size === 0) {
      if (this.#onRefused !== undefined) subscribe(CHANNELS.refused, this.#listener);
      if (this.#onTransport !== undefined) subscribe(CHANNELS.transport, this.#transportListener);
    }
    this.#hosts.add(host);
    return () => {
      if (!this.#hosts.delete(host) || this.#hosts.size > 0) return;
      if (this.#onRefused !== undefined) unsubscribe(CHANNELS.refused, this.#listener);
      if (this.#onTransport !== undefined) unsubscribe(CHANNELS.transport, this.#transportListener);
    };
  }

  [Symbol.iterator](): IterableIterator<ServableWith<'name' | 'stats' | 'options'>> {
    return this.#hosts.values();
  }
}
