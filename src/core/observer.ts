import type { ReleaseReason } from './policy';

/** What happened in one released batch (all times in milliseconds). */
export interface BatchEvent {
  /** The host's `name`. */
  readonly host: string;
  /** Rows in the batch. */
  readonly rows: number;
  /** Requests in the batch. */
  readonly requests: number;
  /** Why the batch was released. */
  readonly reason: ReleaseReason;
  /** Queue wait of the oldest request in the batch. */
  readonly queueWaitOldestMs: number;
  /** Mean queue wait of the batch's requests. */
  readonly queueWaitMeanMs: number;
  /** Time spent in the batcher's `partition` and `merge`. */
  readonly mergeMs: number;
  /** Time spent in the batch function. */
  readonly runMs: number;
  /** Time spent in the batcher's `split` and result checks. */
  readonly splitMs: number;
  /** Calls of the batch function (more than 1 with groups, or when `isolateErrors` bisects). */
  readonly modelCalls: number;
  /** Fraction of the batch's input elements that were padding (0 without a padding batcher). */
  readonly paddingWaste: number;
  /** Requests answered with a value. */
  readonly succeeded: number;
  /** Requests rejected by this batch (errors, per-item errors, contract breaks). */
  readonly failed: number;
  /** Requests still waiting in the queue after this batch was released. */
  readonly queued: number;
  /** Clock time the batch started (the clock's scale: `performance.now()` by default). */
  readonly startedAt: number;
  /**
   * What {@link HostObserver.captureContext} returned for each request of the batch, in order
   * (empty when the observer does not capture). Tracing adapters link the batch span to these.
   */
  readonly contexts: readonly unknown[];
}

/** How a request ended. */
export type RequestOutcome = 'ok' | 'error' | 'timeout' | 'aborted' | 'queue-full' | 'stopped' | 'shed';

/** What happened to one request (all times in milliseconds). */
export interface RequestEvent {
  /** The host's `name`. */
  readonly host: string;
  /** How it ended. */
  readonly outcome: RequestOutcome;
  /** Rows it carried. */
  readonly rows: number;
  /** Time from `inference()` until its batch started (or until it ended, if it never ran). */
  readonly queueMs: number;
  /** Time from its batch's start until it was settled (0 if it never ran). */
  readonly runMs: number;
  /** Time from `inference()` until it was settled. */
  readonly totalMs: number;
}

/**
 * The `node:diagnostics_channel` names: a host publishes its {@link BatchEvent}s on `batch` and
 * {@link RequestEvent}s on `request`; a transport publishes on `refused` a {@link RequestEvent}
 * (0 rows, outcome `'queue-full'`) for each request it refused before the host saw it (the HTTP
 * server's `limits.maxConcurrentRequests`), which the metric adapters and `/stats` count beside
 * the host's own; a `GenerationHost` publishes on `sequence` the `SequenceEvent` of each ended
 * `generate()` call (what `/dashboard` reads time to first token from); a serving core publishes
 * on `transport` a {@link TransportEvent} for each inference call it admits for a model,
 * naming the transport it came over (what `microbatch_transport_requests_total` counts).
 */
export const CHANNELS = { batch: 'microbatch:batch', request: 'microbatch:request', refused: 'microbatch:refused', sequence: 'microbatch:sequence', transport: 'microbatch:transport' } as const;

/**
 * A call a serving core admitted for a host, and the transport it came over: published on
 * `CHANNELS.transport` (only while someone subscribes).
 *
 * @example
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * subscribe(CHANNELS.transport, (e) => console.log((e as TransportEvent).transport));
 * ```
 */
export interface TransportEvent {
  /** The model's host name. */
  readonly host: string;
  /** `'http'` (REST, the Open Inference Protocol and Triton's extensions) or `'grpc'`. */
  readonly transport: 'http' | 'grpc';
}

/**
 * Receives a host's reports. Every method is optional and is called synchronously on the host's
 * thread, so keep it cheap; an observer that throws is reported once with `process.emitWarning`
 * and never disturbs the host.
 *
 * @example
 * ```ts
 * const host = new ModelHost(fn, {
 *   maxBatchSize: 32,
 *   observer: { onBatch: (b) => console.log(`${b.rows} rows (${b.reason}) in ${b.runMs.toFixed(1)} ms`) },
 * });
 * ```
 */
export interface HostObserver {
  /**
   * Called synchronously inside `inference()`, in the caller's async context; the value is kept
   * with the request and handed back in {@link BatchEvent.contexts}. Tracing adapters return the
   * active span context here.
   */
  captureContext?(): unknown;
  /** After every released batch has settled its requests. */
  onBatch?(event: BatchEvent): void;
  /** After every request is settled, whichever way. */
  onRequest?(event: RequestEvent): void;
}
