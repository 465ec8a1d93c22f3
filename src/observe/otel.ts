/**
 * OpenTelemetry metrics and traces for microbatch hosts, through `@opentelemetry/api` only (an
 * optional peer dependency, imported only by this subpath: `microbatch/otel`). Without an SDK
 * registered every call is a no-op, as the API intends for libraries.
 * @packageDocumentation
 * @module microbatch/otel
 */
import type * as OtelApi from '@opentelemetry/api';
import type { Attributes, Link, Meter, SpanContext, Tracer } from '@opentelemetry/api';
import type { BatchEvent, HostObserver } from '../core/observer';
import type { GenerationObserver } from '../generate/events';
import { batchSizeBuckets, HostSet, SECONDS_BUCKETS, TOKENS_PER_SECOND_BUCKETS } from './common';
import type { ServableWith } from '../core/servable';
import { requireOptionalPeer } from '../core/optional-peer';

// @opentelemetry/api is an optional peer: loaded when this subpath is imported, with a message naming it if absent.
const { context, isSpanContextValid, metrics, SpanKind, SpanStatusCode, trace } = requireOptionalPeer<typeof OtelApi>('@opentelemetry/api', 'microbatch/otel');

/** Options of {@link otelInstrumentation}. */
export interface OtelOptions {
  /**
   * Meter for the instruments.
   * @default metrics.getMeter('microbatch')
   */
  meter?: Meter;
  /**
   * Tracer for the batch spans.
   * @default trace.getTracer('microbatch')
   */
  tracer?: Tracer;
  /**
   * Record one span per batch, linked to the spans that were active when each of its requests
   * called `inference()`.
   * @default true
   */
  spans?: boolean;
  /**
   * Largest `maxBatchSize` of the hosts you will watch, for the batch size histogram's bucket
   * advice (powers of two up to it, plus it).
   * @default 128
   */
  maxBatchSize?: number;
  /**
   * Bucket advice in seconds for the duration histograms.
   * @default 0.5 ms to 10 s, 14 buckets
   */
  secondsBuckets?: readonly number[];
}

/** What {@link otelInstrumentation} returns. */
export interface OtelInstrumentation {
  /**
   * Pass as a host's `observer` (or through `combineObservers`), or a `GenerationHost`'s; one
   * serves any number of hosts.
   */
  readonly observer: HostObserver & GenerationObserver;
  /** Reports a host's queue depth and batches in flight as observable gauges; returns the undo. */
  watch(host: ServableWith<'name' | 'stats' | 'options'>): () => void;
}

/**
 * Creates the microbatch instruments and, when `spans` is on, the batch spans. Attribute
 * `microbatch.host` carries the host's name on every data point.
 *
 * | instrument | kind | unit | attributes |
 * | --- | --- | --- | --- |
 * | `microbatch.batch.size` | histogram | `{row}` | host |
 * | `microbatch.batches` | counter | `{batch}` | host, `microbatch.reason` |
 * | `microbatch.queue.wait` | histogram, per request | `s` | host |
 * | `microbatch.batch.run` | histogram, per batch | `s` | host |
 * | `microbatch.request.duration` | histogram, answered requests | `s` | host |
 * | `microbatch.requests` | counter | `{request}` | host, `microbatch.outcome` |
 * | `microbatch.transport.requests` | counter of inference calls a serving core admitted for a watched host | `{request}` | host, `microbatch.transport` (`http`, `grpc`) |
 * | `microbatch.queue.depth` | observable gauge | `{request}` | host |
 * | `microbatch.batches.in_flight` | observable gauge | `{batch}` | host |
 * | `microbatch.cache.requests` | observable counter (hosts with `cache`) | `{request}` | host, `microbatch.cache.result` (`hit`, `shared`, `miss`) |
 * | `microbatch.cache.entries` | observable gauge (hosts with `cache`) | `{entry}` | host |
 * | `microbatch.generation.steps` | counter (a `GenerationHost`) | `{step}` | host, `microbatch.step.prefill` |
 * | `microbatch.generation.step.rows` | histogram | `{row}` | host |
 * | `microbatch.generation.tokens` | counter | `{token}` | host |
 * | `microbatch.generation.sequences` | counter | `{sequence}` | host, `microbatch.outcome` |
 * | `microbatch.generation.time_to_first_token` | histogram | `s` | host |
 * | `microbatch.generation.tokens_per_second` | histogram, per sequence after its first token | `{token}/s` | host |
 *
 * The batch span (`microbatch.batch`, kind INTERNAL) covers merge, run and split; its attributes
 * are the batch's rows, requests, release reason, queue waits and phase times, and it carries a
 * link to every request span captured at `inference()`, so a trace viewer can go from any
 * request to the one model call that served it.
 *
 * @example
 * ```ts
 * import { otelInstrumentation } from 'microbatch/otel';
 *
 * const otel = otelInstrumentation({ maxBatchSize: 32 });
 * const host = new ModelHost(fn, { name: 'classifier', maxBatchSize: 32, observer: otel.observer });
 * otel.watch(host);
 * ```
 */
export function otelInstrumentation(options: OtelOptions = {}): OtelInstrumentation {
  const meter = options.meter ?? metrics.getMeter('microbatch');
  const tracer = options.tracer ?? trace.getTracer('microbatch');
  const spans = options.spans ?? true;
  const seconds = [...(options.secondsBuckets ?? SECONDS_BUCKETS)];
  // Requests a transport refused for a watched host before it saw them count as its own refusals.
  const hosts = new HostSet(
    (e) => requests.add(1, { 'microbatch.host': e.host, 'microbatch.outcome': e.outcome }),
    (e) => byTransport.add(1, { 'microbatch.host': e.host, 'microbatch.transport': e.transport }),
  );
  const rowBuckets = batchSizeBuckets(options.maxBatchSize ?? 128);

  const batchSize = meter.createHistogram('microbatch.batch.size', {
    description: 'Rows per released batch.',
    unit: '{row}',
    advice: { explicitBucketBoundaries: [...rowBuckets] },
  });
  const batches = meter.createCounter('microbatch.batches', { description: 'Batches released, by why.', unit: '{batch}' });
  const queueWait = meter.createHistogram('microbatch.queue.wait', {
    description: 'Time from inference() until the request left the queue.',
    unit: 's',
    advice: { explicitBucketBoundaries: seconds },
  });
  const run = meter.createHistogram('microbatch.batch.run', {
    description: 'Time a batch spent in the batch function.',
    unit: 's',
    advice: { explicitBucketBoundaries: seconds },
  });
  const duration = meter.createHistogram('microbatch.request.duration', {
    description: 'Time from inference() to the answer, answered requests only.',
    unit: 's',
    advice: { explicitBucketBoundaries: seconds },
  });
  const requests = meter.createCounter('microbatch.requests', { description: 'Requests settled, by outcome.', unit: '{request}' });
  const byTransport = meter.createCounter('microbatch.transport.requests', { description: 'Inference calls a server admitted for the host, by transport (http, grpc).', unit: '{request}' });
  const depth = meter.createObservableGauge('microbatch.queue.depth', { description: 'Requests waiting in the queue.', unit: '{request}' });
  const inFlight = meter.createObservableGauge('microbatch.batches.in_flight', { description: 'Batches running now.', unit: '{batch}' });
  // The cache's counts live in host.stats (hits never reach the observer: they never queue).
  const cacheRequests = meter.createObservableCounter('microbatch.cache.requests', {
    description: 'Requests the response cache answered from a kept result (hit), from a computation already waiting or running (shared), or computed (miss).',
    unit: '{request}',
  });
  const cacheEntries = meter.createObservableGauge('microbatch.cache.entries', { description: 'Finished results the response cache keeps now.', unit: '{entry}' });
  meter.addBatchObservableCallback(
    (result) => {
      for (const h of hosts) {
        const attrs = { 'microbatch.host': h.name };
        const stats = h.stats;
        result.observe(depth, stats.queued, attrs);
        result.observe(inFlight, stats.runningBatches ?? 0, attrs);
        const c = stats.cache;
        if (c === undefined) continue;
        result.observe(cacheRequests, c.hits, { ...attrs, 'microbatch.cache.result': 'hit' });
        result.observe(cacheRequests, c.shared, { ...attrs, 'microbatch.cache.result': 'shared' });
        result.observe(cacheRequests, c.misses, { ...attrs, 'microbatch.cache.result': 'miss' });
        result.observe(cacheEntries, c.size, attrs);
      }
    },
    [depth, inFlight, cacheRequests, cacheEntries],
  );

  const steps = meter.createCounter('microbatch.generation.steps', { description: 'Decode steps (and prefill calls) of a generation host.', unit: '{step}' });
  const stepRows = meter.createHistogram('microbatch.generation.step.rows', {
    description: 'Sequences per decode step.',
    unit: '{row}',
    advice: { explicitBucketBoundaries: [...rowBuckets] },
  });
  const tokens = meter.createCounter('microbatch.generation.tokens', { description: 'Tokens generated.', unit: '{token}' });
  const sequences = meter.createCounter('microbatch.generation.sequences', { description: 'Generated sequences ended, by outcome.', unit: '{sequence}' });
  const ttft = meter.createHistogram('microbatch.generation.time_to_first_token', {
    description: 'Time from generate() to the first token.',
    unit: 's',
    advice: { explicitBucketBoundaries: seconds },
  });
  const tokenRate = meter.createHistogram('microbatch.generation.tokens_per_second', {
    description: 'Per sequence, tokens per second after its first token.',
    unit: '{token}/s',
    advice: { explicitBucketBoundaries: [...TOKENS_PER_SECOND_BUCKETS] },
  });

  const observer: HostObserver & GenerationObserver = {
    onBatch(e) {
      const attrs = { 'microbatch.host': e.host };
      batchSize.record(e.rows, attrs);
      batches.add(1, { ...attrs, 'microbatch.reason': e.reason });
      run.record(e.runMs / 1000, attrs);
      if (spans) recordBatchSpan(tracer, e);
    },
    onRequest(e) {
      const attrs = { 'microbatch.host': e.host };
      requests.add(1, { ...attrs, 'microbatch.outcome': e.outcome });
      if (e.rows === 0) return; // refused before queueing: no wait to report
      queueWait.record(e.queueMs / 1000, attrs);
      if (e.outcome === 'ok') duration.record(e.totalMs / 1000, attrs);
    },
    onStep(e) {
      const attrs = { 'microbatch.host': e.host };
      steps.add(1, { ...attrs, 'microbatch.step.prefill': e.prefill });
      stepRows.record(e.sequences, attrs);
      tokens.add(e.tokens, attrs);
    },
    onSequence(e) {
      const attrs = { 'microbatch.host': e.host };
      sequences.add(1, { ...attrs, 'microbatch.outcome': e.outcome });
      if (e.tokens > 0) ttft.record(e.timeToFirstTokenMs / 1000, attrs);
      if (e.tokensPerSecond > 0) tokenRate.record(e.tokensPerSecond, attrs); // 0: fewer than two tokens, nothing to rate
    },
  };
  // Capture only when tracing: it runs inside every inference() call.
  if (spans) observer.captureContext = () => trace.getSpanContext(context.active());
  return { observer, watch: (host) => hosts.add(host) };
}

/**
 * Records a finished batch as a span. The event arrives after the batch settled; its phase times
 * are exact, so the span is placed that long before now on the wall clock (the host's clock may be
 * a fake one in tests, so `startedAt` is not used as a wall time).
 */
function recordBatchSpan(tracer: Tracer, e: BatchEvent): void {
  const links: Link[] = [];
  for (const c of e.contexts) {
    if (c !== undefined && isSpanContextValid(c as SpanContext)) links.push({ context: c as SpanContext });
  }
  const attributes: Attributes = {
    'microbatch.host': e.host,
    'microbatch.batch.rows': e.rows,
    'microbatch.batch.requests': e.requests,
    'microbatch.batch.reason': e.reason,
    'microbatch.batch.queue_wait_oldest_ms': e.queueWaitOldestMs,
    'microbatch.batch.queue_wait_mean_ms': e.queueWaitMeanMs,
    'microbatch.batch.merge_ms': e.mergeMs,
    'microbatch.batch.run_ms': e.runMs,
    'microbatch.batch.split_ms': e.splitMs,
    'microbatch.batch.model_calls': e.modelCalls,
    'microbatch.batch.padding_waste': e.paddingWaste,
    'microbatch.batch.succeeded': e.succeeded,
    'microbatch.batch.failed': e.failed,
    'microbatch.queue.depth': e.queued,
  };
  const end = performance.timeOrigin + performance.now();
  const start = end - (e.mergeMs + e.runMs + e.splitMs);
  // A root span: the batch belongs to many traces at once, so it links to them instead of picking one parent.
  const span = tracer.startSpan('microbatch.batch', { kind: SpanKind.INTERNAL, startTime: start, links, attributes, root: true });
  if (e.failed > 0) span.setStatus({ code: SpanStatusCode.ERROR, message: `${e.failed} of ${e.requests} requests failed` });
  span.end(end);
}
