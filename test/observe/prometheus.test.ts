import { channel } from 'node:diagnostics_channel';
import { register as globalRegistry, Registry } from 'prom-client';
import { CHANNELS } from '../../src/core/observer';
import { ModelHost } from '../../src/engine/model-host';
import { ManualClock } from '../../src/core/manual-clock';
import { combineObservers } from '../../src/observe/combine';
import { batchSizeBuckets } from '../../src/observe/common';
import { prometheusMetrics } from '../../src/observe/prometheus';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput } from '../../src/generate/options';
import { ControlledModel, settle, track } from '../support/controlled-model';

type Json = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
type Value = { value: number; labels: Record<string, string | number>; metricName?: string };

async function metric(registry: Registry, name: string): Promise<Value[]> {
  const all: Json = await registry.getMetricsAsJSON();
  const m = all.find((x) => x.name === name);
  if (m === undefined) throw new Error(`no metric ${name}; have ${all.map((x) => x.name).join(', ')}`);
  return m.values as Value[];
}
const pick = (values: Value[], metricName: string, labels: Record<string, string | number>) =>
  values.find((v) => (v.metricName ?? '') === metricName && Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;

function setup(name = 'clf') {
  const registry = new Registry();
  const prom = prometheusMetrics({ registry, maxBatchSize: 8 });
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const host = new ModelHost(model.fn, { name, maxBatchSize: 8, clock, observer: prom.observer, timeoutMs: 50 });
  const unwatch = prom.watch(host);
  return { registry, prom, clock, model, host, unwatch };
}

describe('prometheusMetrics', () => {
  test('a transport\'s refusals (CHANNELS.refused) count as queue-full for a watched host only, and only while it is watched', async () => {
    const { registry, unwatch } = setup('door');
    const refuse = (host: string): void => channel(CHANNELS.refused).publish({ host, outcome: 'queue-full', rows: 0, queueMs: 0, runMs: 0, totalMs: 0 });
    refuse('door');
    refuse('door');
    refuse('someone-else');
    unwatch();
    refuse('door');
    const values = await metric(registry, 'microbatch_requests_total');
    expect(pick(values, '', { host: 'door', outcome: 'queue-full' })).toBe(2);
    expect(pick(values, '', { host: 'someone-else', outcome: 'queue-full' })).toBeUndefined();
  });

  test('admitted calls by transport (CHANNELS.transport) count for a watched host only, and only while it is watched', async () => {
    const { registry, unwatch } = setup('door');
    const admit = (host: string, transport: 'http' | 'grpc'): void => channel(CHANNELS.transport).publish({ host, transport });
    admit('door', 'grpc');
    admit('door', 'grpc');
    admit('door', 'http');
    admit('someone-else', 'http');
    unwatch();
    admit('door', 'http');
    const values = await metric(registry, 'microbatch_transport_requests_total');
    expect(pick(values, '', { host: 'door', transport: 'grpc' })).toBe(2);
    expect(pick(values, '', { host: 'door', transport: 'http' })).toBe(1);
    expect(pick(values, '', { host: 'someone-else', transport: 'http' })).toBeUndefined();
  });

  test('after real batches: batch size buckets, reasons, outcomes, queue waits, run time, gauges', async () => {
    const { registry, clock, model, host, unwatch } = setup();
    const burst = [1, 2, 3, 4, 5].map((x) => track(host.inference(x)));
    await settle();
    const queued = Array.from({ length: 10 }, (_, i) => track(host.inference(10 + i)));
    await settle();
    // Scraped while the first batch runs and 10 wait.
    expect(pick(await metric(registry, 'microbatch_queue_depth'), '', { host: 'clf' })).toBe(10);
    expect(pick(await metric(registry, 'microbatch_batches_in_flight'), '', { host: 'clf' })).toBe(1);
    expect(pick(await metric(registry, 'microbatch_max_batch_size'), '', { host: 'clf' })).toBe(8);

    clock.advance(3); // the first batch runs 3 ms; the 10 queued wait 3 ms
    model.answer(0, (x) => x);
    await settle();
    clock.advance(4);
    model.answer(1, (x) => (x === 11 ? new Error('bad item') : x)); // 8 rows, one failed item
    await settle();
    clock.advance(60); // the last 2 time out while running (timeoutMs 50)
    model.answer(2, (x) => x);
    await settle();
    expect(burst.every((b) => b.state === 'resolved')).toBe(true);
    expect(queued.filter((q) => q.state === 'rejected')).toHaveLength(3);

    const size = await metric(registry, 'microbatch_batch_size');
    expect(size.filter((v) => v.metricName === 'microbatch_batch_size_bucket').map((v) => [v.labels.le, v.value])).toEqual([
      [1, 0],
      [2, 1],
      [4, 1],
      [8, 3],
      ['+Inf', 3],
    ]);
    expect(pick(size, 'microbatch_batch_size_sum', { host: 'clf' })).toBe(15);
    const reasons = await metric(registry, 'microbatch_batches_total');
    expect(pick(reasons, '', { host: 'clf', reason: 'idle' })).toBe(2);
    expect(pick(reasons, '', { host: 'clf', reason: 'full' })).toBe(1);
    const outcomes = await metric(registry, 'microbatch_requests_total');
    expect(pick(outcomes, '', { host: 'clf', outcome: 'ok' })).toBe(12);
    expect(pick(outcomes, '', { host: 'clf', outcome: 'error' })).toBe(1);
    expect(pick(outcomes, '', { host: 'clf', outcome: 'timeout' })).toBe(2);

    const wait = await metric(registry, 'microbatch_queue_wait_seconds');
    expect(pick(wait, 'microbatch_queue_wait_seconds_count', { host: 'clf' })).toBe(15);
    expect(pick(wait, 'microbatch_queue_wait_seconds_bucket', { host: 'clf', le: 0.0005 })).toBe(5); // the burst ran at once
    expect(pick(wait, 'microbatch_queue_wait_seconds_bucket', { host: 'clf', le: 0.0025 })).toBe(5);
    expect(pick(wait, 'microbatch_queue_wait_seconds_bucket', { host: 'clf', le: 0.005 })).toBe(13); // 8 waited 3 ms
    expect(pick(wait, 'microbatch_queue_wait_seconds_bucket', { host: 'clf', le: 0.01 })).toBe(15); // 2 waited 7 ms
    expect(pick(wait, 'microbatch_queue_wait_seconds_sum', { host: 'clf' })).toBeCloseTo(8 * 0.003 + 2 * 0.007);
    const run = await metric(registry, 'microbatch_run_seconds');
    expect(pick(run, 'microbatch_run_seconds_sum', { host: 'clf' })).toBeCloseTo(0.003 + 0.004 + 0.06);
    const duration = await metric(registry, 'microbatch_request_duration_seconds');
    expect(pick(duration, 'microbatch_request_duration_seconds_count', { host: 'clf' })).toBe(12);

    expect(pick(await metric(registry, 'microbatch_queue_depth'), '', { host: 'clf' })).toBe(0);
    unwatch();
    expect(await metric(registry, 'microbatch_queue_depth')).toEqual([]);
    // The text format a Prometheus server scrapes.
    const text = await registry.metrics();
    expect(text).toContain('# TYPE microbatch_batch_size histogram');
    expect(text).toContain('microbatch_requests_total{host="clf",outcome="ok"} 12');
  });

  test('never touches the global registry; one observer serves two hosts, told apart by label', async () => {
    const registry = new Registry();
    const prom = prometheusMetrics({ registry, prefix: 'mb_', maxBatchSize: 4 });
    const a = new ModelHost(async (xs: readonly number[]) => xs, { name: 'a', maxBatchSize: 4, observer: prom.observer });
    const b = new ModelHost(async (xs: readonly number[]) => xs, { name: 'b', maxBatchSize: 4, observer: prom.observer });
    prom.watch(a);
    prom.watch(b);
    await Promise.all([a.inference(1), a.inference(2), b.inference(3)]);
    const size = await metric(registry, 'mb_batch_size');
    expect(pick(size, 'mb_batch_size_sum', { host: 'a' })).toBe(2);
    expect(pick(size, 'mb_batch_size_sum', { host: 'b' })).toBe(1);
    expect((await metric(registry, 'mb_queue_depth')).map((v) => v.labels.host).sort()).toEqual(['a', 'b']);
    expect(globalRegistry.getSingleMetric('mb_batch_size')).toBeUndefined();
    expect(globalRegistry.getSingleMetric('microbatch_batch_size')).toBeUndefined();
    // A second set in the same registry is a naming clash prom-client reports.
    expect(() => prometheusMetrics({ registry, prefix: 'mb_' })).toThrow(/already been registered/);
    expect(() => prometheusMetrics({} as never)).toThrow(TypeError);
    expect(() => prometheusMetrics({} as never)).toThrow(
      'prometheusMetrics: expected `registry` to be a prom-client Registry (pass `register` to use the global one)',
    );
    expect(() => prom.watch({} as never)).toThrow(TypeError);
    expect(() => prom.watch({} as never)).toThrow('microbatch metrics: watch(host) expects a ModelHost (an object with name and stats)');
  });

  test('shed requests are counted by outcome', async () => {
    const registry = new Registry();
    const prom = prometheusMetrics({ registry });
    const host = new ModelHost(async (xs: readonly number[]) => xs, {
      name: 's',
      maxBatchSize: 4,
      observer: prom.observer,
      policy: { name: 'shed-all', decide: (q) => ({ release: false, shed: [...q.requests()] }) },
    });
    await expect(host.inference(1)).rejects.toMatchObject({ reason: 'shed' });
    expect(pick(await metric(registry, 'microbatch_requests_total'), '', { host: 's', outcome: 'shed' })).toBe(1);
  });

  test('cache hits, shared requests and misses, and the entries kept, are read from host.stats at scrape; hosts without a cache add nothing', async () => {
    const registry = new Registry();
    const prom = prometheusMetrics({ registry });
    const cached = new ModelHost(async (xs: readonly string[]) => xs, { name: 'c', maxBatchSize: 4, observer: prom.observer, cache: true });
    const plain = new ModelHost(async (xs: readonly string[]) => xs, { name: 'p', maxBatchSize: 4, observer: prom.observer });
    prom.watch(cached);
    prom.watch(plain);
    await Promise.all([cached.inference('a'), cached.inference('a'), cached.inference('b'), plain.inference('a')]);
    await cached.inference('a');
    const requests = await metric(registry, 'microbatch_cache_requests_total');
    expect([pick(requests, '', { host: 'c', result: 'hit' }), pick(requests, '', { host: 'c', result: 'shared' }), pick(requests, '', { host: 'c', result: 'miss' })]).toEqual([1, 1, 2]);
    expect(requests.filter((v) => v.labels.host === 'p')).toEqual([]);
    expect(pick(await metric(registry, 'microbatch_cache_entries'), '', { host: 'c' })).toBe(2);
    await cached.stop();
    await plain.stop();
  });

  test('a generation host: steps, rows per step, tokens, sequences by outcome, time to first token and tokens per second', async () => {
    const registry = new Registry();
    const prom = prometheusMetrics({ registry, maxBatchSize: 8 });
    const clock = new ManualClock();
    const gen = new GenerationHost(async (xs: readonly StepInput<number>[]) => xs.map((x) => ({ token: x.token + 1, state: 0 })), {
      name: 'writer',
      maxBatchSize: 4,
      initialState: () => 0,
      observer: prom.observer,
      clock,
    });
    await Promise.all([gen.generate([1], { maxTokens: 3 }).collect(), gen.generate([1, 2], { maxTokens: 2 }).collect(), gen.generate([5], { stopTokens: [6] }).collect()]);
    expect(pick(await metric(registry, 'microbatch_generation_steps_total'), '', { host: 'writer' })).toBe(3);
    expect(pick(await metric(registry, 'microbatch_generation_tokens_total'), '', { host: 'writer' })).toBe(6);
    const ended = await metric(registry, 'microbatch_generation_sequences_total');
    expect([pick(ended, '', { host: 'writer', outcome: 'length' }), pick(ended, '', { host: 'writer', outcome: 'stop' })]).toEqual([2, 1]);
    expect(pick(await metric(registry, 'microbatch_generation_step_rows'), 'microbatch_generation_step_rows_sum', { host: 'writer' })).toBe(3 + 2 + 2); // all three, then the two still going, twice
    expect(pick(await metric(registry, 'microbatch_time_to_first_token_seconds'), 'microbatch_time_to_first_token_seconds_count', { host: 'writer' })).toBe(3);
    // Tokens per second needs two tokens at distinct times; on a clock that never moves there are none.
    expect(pick(await metric(registry, 'microbatch_generation_tokens_per_second'), 'microbatch_generation_tokens_per_second_count', { host: 'writer' })).toBeUndefined();
    await gen.stop();
  });

  test('combineObservers: each observer gets every event and only its own captured contexts', async () => {
    const seen: unknown[][] = [];
    const plain: number[] = [];
    let n = 0;
    const observer = combineObservers(
      { captureContext: () => `ctx${n++}`, onBatch: (e) => seen.push([...e.contexts]) },
      { onBatch: (e) => plain.push(e.contexts.length) },
      undefined,
      {
        onBatch: () => {
          throw new Error('broken observer');
        },
      },
    );
    const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 4, observer });
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    await Promise.all([host.inference(1), host.inference(2)]);
    await settle();
    warn.mockRestore();
    expect(seen).toEqual([['ctx0', 'ctx1']]);
    expect(plain).toEqual([0]);
  });

  test('batch size buckets are powers of two up to maxBatchSize, which gets its own', () => {
    expect(batchSizeBuckets(1)).toEqual([1]);
    expect(batchSizeBuckets(24)).toEqual([1, 2, 4, 8, 16, 24]);
    expect(batchSizeBuckets(32)).toEqual([1, 2, 4, 8, 16, 32]);
    expect(() => batchSizeBuckets(0)).toThrow(RangeError);
    expect(() => batchSizeBuckets(2.5)).toThrow('microbatch metrics: expected `maxBatchSize` to be an integer from 1 and up, got 2.5');
  });
});
