import { channel } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { CHANNELS, type RequestEvent } from '../../src/core/observer';
import { createInferenceServer } from '../../src/http';
import { MAX_DASHBOARD_STREAMS } from '../../src/http/dashboard/handler';
import { DashboardFeed } from '../../src/http/dashboard/feed';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput } from '../../src/generate/options';
import { createServingHost } from '../../src/onnx/serving-host';
import { ServingRegistry, StatsCollector, type InferenceServable } from '../../src/serving';
import { call } from '../http/helpers';
import { load, serveLinear, useLinearModel } from './served';
import { openTicks, type TickStream } from './sse';

// GET /dashboard and its event stream over HTTP: the files, the errors, the numbers (equal to
// /stats), and listening to the hosts only while a page watches.

const linear = useLinearModel();

test('off unless asked for: without `dashboard: true` /dashboard is the server\'s 404', async () => {
  const host = await createServingHost(linear(), { name: 'linear', maxBatchSize: 8, workers: 0 });
  const server = createInferenceServer({ models: { linear: host } });
  const { port } = await server.listen(0);
  try {
    for (const path of ['/dashboard', '/dashboard/', '/dashboard/events']) {
      const r = await call(port, 'GET', path);
      expect([r.status, r.json().code]).toEqual([404, 'not_found']);
    }
  } finally {
    await server.close();
  }
});

test.each([
  ['yes', '"yes" (string)'],
  [1, '1 (number)'],
  [null, 'null'],
  [{}, 'an object'],
])('`dashboard: %p` is a TypeError naming what came', async (value, named) => {
  const host = await createServingHost(linear(), { name: 'linear', maxBatchSize: 8, workers: 0 });
  try {
    expect(() => createInferenceServer({ models: { linear: host }, dashboard: value as unknown as boolean })).toThrow(
      new TypeError(`createInferenceServer: expected \`dashboard\` to be true or false, got ${named}`),
    );
  } finally {
    await host.stop();
  }
});

describe('with the dashboard on', () => {
  let port: number;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const served = await serveLinear(linear(), 'linear');
    port = served.port;
    close = () => served.server.close();
  });
  afterAll(() => close());

  test('/dashboard redirects to the folder, whose page, script and styles come from this server only', async () => {
    const bare = await call(port, 'GET', '/dashboard?x=1');
    expect([bare.status, bare.headers.location]).toEqual([308, 'dashboard/']);
    const page = await call(port, 'GET', '/dashboard/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.text).toContain('<script src="dashboard.js"></script>');
    expect(page.text).not.toMatch(/(src|href)="(https?:)?\/\//); // nothing from outside
    const script = await call(port, 'GET', '/dashboard/dashboard.js');
    expect([script.status, script.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect(script.text).toContain("new EventSource('events')");
    const css = await call(port, 'GET', '/dashboard/dashboard.css');
    expect([css.status, css.headers['content-type']]).toEqual([200, 'text/css; charset=utf-8']);
    // uPlot, byte for byte the installed package's (the build copies it into dist/vendor/uplot).
    for (const name of ['uPlot.iife.min.js', 'uPlot.min.css']) {
      const r = await call(port, 'GET', `/dashboard/${name}`);
      expect(r.status).toBe(200);
      expect(r.body.equals(readFileSync(require.resolve(`uplot/dist/${name}`)))).toBe(true);
    }
    const head = await call(port, 'HEAD', '/dashboard/dashboard.js');
    expect([head.status, head.headers['content-length'], head.text]).toEqual([200, String(script.body.length), '']);
    const headEvents = await call(port, 'HEAD', '/dashboard/events'); // answered, not held open
    expect([headEvents.status, headEvents.headers['content-type']]).toEqual([200, 'text/event-stream; charset=utf-8']);
  });

  test('another method is 405 with Allow, another file the server\'s 404', async () => {
    for (const path of ['/dashboard/', '/dashboard/events', '/dashboard/dashboard.js']) {
      const r = await call(port, 'POST', path, { body: '{}' });
      expect([r.status, r.headers.allow, r.json()]).toEqual([405, 'GET, HEAD', { error: `POST is not allowed on ${path}; use GET`, code: 'method_not_allowed' }]);
    }
    for (const path of ['/dashboard/nope.js', '/dashboard/../package.json', '/dashboard/events/x', '/dashboardx']) {
      const r = await call(port, 'GET', path);
      expect([r.status, r.json().code]).toEqual([404, 'not_found']);
    }
  });

  test('the stream sends the served models at once, then a tick a second whose totals equal /stats', async () => {
    const stream = await openTicks(port);
    try {
      expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      const first = await stream.until(() => true);
      expect(first.models.map((m) => [m.name, m.kind, m.state, m.version, m.maxBatchSize])).toEqual([['linear', 'model', 'ready', '1', 8]]);
      const before = first.models[0]!.requests;
      await load(port, 'linear', 50, 8);
      const stats = (await call(port, 'GET', '/v2/models/linear/stats')).json().model_stats[0];
      const after = await stream.until((t) => t.models[0]!.requests === before + 50);
      const m = after.models[0]!;
      expect(m.ok).toBe(stats.inference_stats.success.count);
      expect(m.requests).toBe(stats.inference_stats.success.count + stats.inference_stats.fail.count);
      expect(m.batchSizes).toEqual(stats.batch_stats.map((b: { batch_size: number; compute_infer: { count: number } }) => [b.batch_size, b.compute_infer.count]));
      expect(m.rejected).toEqual({ queueFull: 0, deadline: 0, aborted: 0, stopped: 0, error: 0 });
      // The ticks' own events (the stream was open all along): 50 answered, and each batch's reason.
      const events = stream.ticks.flatMap((t) => t.models.map((x) => x.window));
      expect(events.reduce((n, w) => n + (w.outcomes.ok ?? 0), 0)).toBe(50);
      expect(events.reduce((n, w) => n + Object.values(w.reasons).reduce((a, b) => a + b, 0), 0)).toBe(m.batchSizes.reduce((n, [, c]) => n + c, 0) - first.models[0]!.batchSizes.reduce((n, [, c]) => n + c, 0));
      const timed = events.find((w) => w.queueMs !== null && w.runMs !== null)!;
      expect(timed.queueMs![0]).toBeLessThanOrEqual(timed.queueMs![1]);
      expect(timed.runMs![0]).toBeGreaterThan(0);
    } finally {
      stream.close();
    }
  });

  test(`at most ${MAX_DASHBOARD_STREAMS} streams at once: one more is 503 with Retry-After`, async () => {
    const streams: TickStream[] = [];
    try {
      for (let i = 0; i < MAX_DASHBOARD_STREAMS; i++) streams.push(await openTicks(port));
      const r = await call(port, 'GET', '/dashboard/events');
      expect([r.status, r.headers['retry-after'], r.json()]).toEqual([503, '5', { error: `the dashboard streams to at most ${MAX_DASHBOARD_STREAMS} pages at once; close one`, code: 'too_many_streams' }]);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

test('close() ends the open streams at once, so a draining close does not wait for them', async () => {
  const served = await serveLinear(linear(), 'linear');
  const stream = await openTicks(served.port);
  const started = Date.now();
  await served.server.close({ timeoutMs: 20_000 });
  await stream.ended;
  expect(Date.now() - started).toBeLessThan(10_000); // far below the 20 s a waiting drain would take
});

test('a loading model is shown loading, then ready; a generator with its tokens', async () => {
  let resolve!: (h: InferenceServable) => void;
  const later = new Promise<InferenceServable>((r) => (resolve = r));
  const counter = new GenerationHost(async (xs: ReadonlyArray<StepInput<number>>) => xs.map((x) => ({ token: x.token + 1, state: 0 })), { maxBatchSize: 4, initialState: () => 0, name: 'counter' });
  const server = createInferenceServer({ models: { linear: later }, generators: { counter }, dashboard: true });
  const { port } = await server.listen(0);
  const stream = await openTicks(port);
  try {
    const first = await stream.until(() => true);
    expect(first.models.map((m) => [m.name, m.kind, m.state, m.version])).toEqual([['linear', 'model', 'loading', null], ['counter', 'generator', 'ready', '1']]);
    resolve(await createServingHost(linear(), { name: 'linear', maxBatchSize: 8, workers: 0 }));
    expect((await call(port, 'POST', '/v2/models/counter/generate', { body: { input_ids: [1], parameters: { max_tokens: 3 } } })).status).toBe(200);
    const t = await stream.until((x) => x.models[0]!.state === 'ready' && x.models[1]!.tokens === 3);
    expect(t.models[1]).toMatchObject({ kind: 'generator', queued: 0, running: 0, tokens: 3 });
    // Its time to first token, from the sequence's event (CHANNELS.sequence) in the tick it ended in.
    const ttft = stream.ticks.map((x) => x.models[1]!.window.ttftMs).filter((w) => w !== null);
    expect(ttft).toHaveLength(1);
    expect(ttft[0]![0]).toBeGreaterThanOrEqual(0);
  } finally {
    stream.close();
    await server.close();
  }
});

test('the feed listens to the hosts only while watched: events before watch() and after its undo are not seen', () => {
  const registry = new ServingRegistry('test');
  const host = { name: 'h', model: { inputs: [], outputs: [] }, stats: { queued: 0, running: 0 }, inference: async () => ({}), stop: async () => undefined };
  registry.add('served', host, 'model');
  const stats = new StatsCollector();
  const feed = new DashboardFeed(registry, stats);
  const publish = (outcome: RequestEvent['outcome']): void => channel(CHANNELS.request).publish({ host: 'h', outcome, rows: 1, queueMs: 3, runMs: 1, totalMs: 4 } satisfies RequestEvent);
  const outcomes = (): Readonly<Record<string, number>> => feed.tick().models[0]!.window.outcomes;
  try {
    publish('ok');
    expect(feed.watched).toBe(false);
    const undo = feed.watch();
    const undo2 = feed.watch();
    expect(outcomes()).toEqual({});
    publish('timeout');
    publish('timeout');
    publish('shed');
    expect(feed.tick().models[0]!.window).toEqual({ outcomes: { timeout: 2, shed: 1 }, reasons: {}, queueMs: [3, 3], runMs: null, ttftMs: null });
    expect(outcomes()).toEqual({}); // each tick starts afresh
    undo();
    undo(); // twice is once
    expect(feed.watched).toBe(true);
    undo2();
    expect(feed.watched).toBe(false);
    publish('ok');
    feed.watch()();
    expect(outcomes()).toEqual({});
  } finally {
    stats.close();
  }
});
