import { context, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type HistogramMetricData,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ModelHost } from '../../src/engine/model-host';
import { ManualClock } from '../../src/core/manual-clock';
import { otelInstrumentation } from '../../src/observe/otel';
import { ControlledModel, settle, track } from '../support/controlled-model';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput } from '../../src/generate/options';
import { channel } from 'node:diagnostics_channel';
import { CHANNELS } from '../../src/core/observer';

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});

function setup() {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  const tracer = tracerProvider.getTracer('test');
  const otel = otelInstrumentation({ meter: meterProvider.getMeter('microbatch'), tracer, maxBatchSize: 8 });
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const host = new ModelHost(model.fn, { name: 'clf', maxBatchSize: 8, clock, observer: otel.observer });
  otel.watch(host);
  const metrics = async (): Promise<Map<string, MetricData>> => {
    await reader.forceFlush();
    const last = metricExporter.getMetrics().at(-1);
    metricExporter.reset();
    return new Map((last?.scopeMetrics ?? []).flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]));
  };
  return { otel, clock, model, host, tracer, spanExporter, metrics, shutdown: () => Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]) };
}

describe('otelInstrumentation', () => {
  test('metrics after real batches: histograms with advised buckets, counters by reason and outcome, observable gauges', async () => {
    const { clock, model, host, metrics, shutdown } = setup();
    [1, 2, 3].forEach((x) => host.inference(x));
    await settle();
    const queued = Array.from({ length: 9 }, (_, i) => track(host.inference(10 + i)));
    await settle();
    let m = await metrics();
    const depth = m.get('microbatch.queue.depth');
    expect(depth?.dataPoints.map((p) => [p.attributes['microbatch.host'], p.value])).toEqual([['clf', 9]]);
    expect(m.get('microbatch.batches.in_flight')?.dataPoints[0]?.value).toBe(1);

    clock.advance(2);
    model.answer(0, (x) => x);
    await settle();
    clock.advance(4);
    model.answer(1, (x) => x);
    await settle();
    model.answer(2, (x) => (x === 18 ? new Error('bad') : x));
    await settle();
    expect(queued.filter((q) => q.state === 'resolved')).toHaveLength(8);

    m = await metrics();
    const size = m.get('microbatch.batch.size') as HistogramMetricData;
    expect(size.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(size.descriptor.unit).toBe('{row}');
    const h = size.dataPoints[0]!.value;
    expect(h.buckets.boundaries).toEqual([1, 2, 4, 8]);
    expect(h.buckets.counts).toEqual([1, 0, 1, 1, 0]); // batches of 3, 8, 1
    expect([h.count, h.sum]).toEqual([3, 12]);
    const reasons = m.get('microbatch.batches')!.dataPoints.map((p) => [p.attributes['microbatch.reason'], p.value]);
    expect(reasons).toEqual(expect.arrayContaining([['idle', 2], ['full', 1]]));
    const outcomes = m.get('microbatch.requests')!.dataPoints.map((p) => [p.attributes['microbatch.outcome'], p.value]);
    expect(outcomes).toEqual(expect.arrayContaining([['ok', 11], ['error', 1]]));
    const wait = (m.get('microbatch.queue.wait') as HistogramMetricData).dataPoints[0]!.value;
    expect(wait.count).toBe(12);
    expect(wait.sum).toBeCloseTo(8 * 0.002 + 0.006);
    expect((m.get('microbatch.batch.run') as HistogramMetricData).dataPoints[0]!.value.sum).toBeCloseTo(0.006);
    expect(m.get('microbatch.request.duration')?.descriptor.unit).toBe('s');
    expect(m.get('microbatch.queue.depth')?.dataPoints[0]?.value).toBe(0);
    await shutdown();
  });

  test('admitted calls by transport (CHANNELS.transport) count for a watched host only, and only while it is watched', async () => {
    const { otel, metrics, shutdown } = setup();
    const admit = (host: string, transport: 'http' | 'grpc'): void => channel(CHANNELS.transport).publish({ host, transport });
    const door = new ModelHost(async (xs: readonly number[]) => xs, { name: 'door', maxBatchSize: 4 });
    const unwatch = otel.watch(door);
    admit('door', 'grpc');
    admit('door', 'grpc');
    admit('door', 'http');
    admit('someone-else', 'http');
    unwatch();
    admit('door', 'http'); // no longer watched
    const points = (await metrics()).get('microbatch.transport.requests')?.dataPoints.map((p) => [p.attributes['microbatch.host'], p.attributes['microbatch.transport'], p.value]);
    expect(points).toEqual(expect.arrayContaining([['door', 'grpc', 2], ['door', 'http', 1]]));
    expect(points).toHaveLength(2);
    await shutdown();
  });

  test('one span per batch, linked to the active span of each request; none for requests without one', async () => {
    const { model, host, tracer, spanExporter, shutdown } = setup();
    const requestSpans: Span[] = [];
    const calls = [1, 2, 3].map((x) =>
      tracer.startActiveSpan(`request ${x}`, async (span) => {
        requestSpans.push(span);
        try {
          return await host.inference(x);
        } finally {
          span.end();
        }
      }),
    );
    const untraced = host.inference(4); // no active span: no link
    await settle();
    model.answer(0, (x) => (x === 2 ? new Error('bad') : x * 2));
    await Promise.allSettled([...calls, untraced]);
    await settle();
    const batchSpans = spanExporter.getFinishedSpans().filter((s) => s.name === 'microbatch.batch');
    expect(batchSpans).toHaveLength(1);
    const span = batchSpans[0]!;
    expect(span.attributes).toMatchObject({
      'microbatch.host': 'clf',
      'microbatch.batch.rows': 4,
      'microbatch.batch.requests': 4,
      'microbatch.batch.reason': 'idle',
      'microbatch.batch.succeeded': 3,
      'microbatch.batch.failed': 1,
    });
    expect(span.status).toMatchObject({ code: 2, message: '1 of 4 requests failed' });
    expect(span.links.map((l) => l.context.spanId).sort()).toEqual(requestSpans.map((s) => s.spanContext().spanId).sort());
    expect(span.links.map((l) => l.context.traceId).sort()).toEqual(requestSpans.map((s) => s.spanContext().traceId).sort());
    // A root of its own: it serves several traces, so it links to them rather than joining one.
    expect(requestSpans.map((s) => s.spanContext().traceId)).not.toContain(span.spanContext().traceId);
    expect(trace.getActiveSpan()).toBeUndefined();
    await shutdown();
  });

  test('spans: false records metrics only and captures nothing', async () => {
    const otel = otelInstrumentation({ spans: false });
    expect(otel.observer.captureContext).toBeUndefined();
    // Without an SDK registered the API is a no-op; the observer still runs without error.
    const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 2, observer: otel.observer });
    otel.watch(host);
    await expect(Promise.all([host.inference(1), host.inference(2)])).resolves.toEqual([1, 2]);
    expect(() => otel.watch({} as never)).toThrow(TypeError);
    expect(() => otel.watch({} as never)).toThrow('microbatch metrics: watch(host) expects a ModelHost (an object with name and stats)');
  });
  test('cache hits, shared requests and misses, and the entries kept, are read from host.stats at collection; hosts without a cache add nothing', async () => {
    const { otel, metrics, host, shutdown } = setup();
    const cached = new ModelHost(async (xs: readonly string[]) => xs, { name: 'c', maxBatchSize: 4, observer: otel.observer, cache: true });
    otel.watch(cached);
    await Promise.all([cached.inference('a'), cached.inference('a'), cached.inference('b')]);
    await cached.inference('a');
    const m = await metrics();
    const points = m.get('microbatch.cache.requests')!.dataPoints.map((p) => [p.attributes['microbatch.host'], p.attributes['microbatch.cache.result'], p.value]);
    expect(points).toEqual([
      ['c', 'hit', 1],
      ['c', 'shared', 1],
      ['c', 'miss', 2],
    ]);
    expect(m.get('microbatch.cache.entries')!.dataPoints.map((p) => [p.attributes['microbatch.host'], p.value])).toEqual([['c', 2]]);
    await cached.stop();
    await host.stop(); // idle: nothing to answer
    await shutdown();
  });
  test('a generation host: steps (prefill apart), rows per step, tokens, sequences by outcome, time to first token, tokens per second', async () => {
    const { otel, metrics, clock, shutdown } = setup();
    const gen = new GenerationHost(
      async (xs: readonly StepInput<number>[]) => {
        clock.advance(5); // each step takes 5 ms on the host clock
        return xs.map((x) => ({ token: x.token + 1, state: 0 }));
      },
      { name: 'writer', maxBatchSize: 4, initialState: () => 0, observer: otel.observer, clock, prefill: async (ps) => ps.map((p) => ({ token: (p.prompt.at(-1) as number) + 1, state: 0 })) },
    );
    await Promise.all([gen.generate([1, 2], { maxTokens: 3 }).collect(), gen.generate([5], { stopTokens: [6] }).collect()]);
    const m = await metrics();
    const points = (name: string) => m.get(name)!.dataPoints.map((p) => [p.attributes['microbatch.step.prefill'] ?? p.attributes['microbatch.outcome'] ?? p.attributes['microbatch.host'], p.value]);
    expect(points('microbatch.generation.steps')).toEqual([
      [true, 1],
      [false, 2],
    ]);
    expect(points('microbatch.generation.tokens')).toEqual([['writer', 4]]);
    expect(points('microbatch.generation.sequences')).toEqual(expect.arrayContaining([['length', 1], ['stop', 1]]));
    expect((m.get('microbatch.generation.time_to_first_token') as HistogramMetricData).dataPoints[0]!.value.count).toBe(2);
    const rate = (m.get('microbatch.generation.tokens_per_second') as HistogramMetricData).dataPoints[0]!.value;
    expect([rate.count, rate.sum]).toEqual([1, 200]); // 2 tokens after the first, 10 ms apart
    await gen.stop();
    await shutdown();
  });
});
