import { createInferenceServer, type LogOptions } from '../../src/http';
import { ServerLogger } from '../../src/serving/logger';
import { call, gate, gatedBody, gatedHost, jsonInputs } from './helpers';
import { waitFor } from '../support/wait-for';

// Logs an operator can live with: an overload writes a summary, not a line per refused request.
// The clock is injected and the summary is flushed by close(), so no test waits on time.

function clock(): { now: () => number; advance(ms: number): void } {
  let t = Date.UTC(2026, 0, 1);
  return { now: () => t, advance: (ms) => (t += ms) };
}

async function overload(log: LogOptions, refusals: number): Promise<void> {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 1, maxQueueSize: 1 });
  const s = createInferenceServer({ models: { gated: host }, log });
  const { port } = await s.listen(0);
  try {
    const running = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
    await waitFor(() => host.stats.running === 1);
    const queued = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
    await waitFor(() => host.stats.queued === 1);
    // The model is held and the queue full: every one of these is refused, whatever the timing.
    const refused = await Promise.all(Array.from({ length: refusals }, () => call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() })));
    expect(refused.map((r) => r.status)).toEqual(new Array(refusals).fill(503));
    hold.open();
    expect((await running).status).toBe(200);
    expect((await queued).status).toBe(200);
  } finally {
    hold.open();
    await s.close();
  }
}

test('overload: 40 refusals write one line with the first message and one summary line', async () => {
  const lines: string[] = [];
  const c = clock();
  const log: LogOptions = { write: (l) => lines.push(l), now: c.now };
  const write = log.write!;
  log.write = (l) => {
    write(l);
    c.advance(100); // the summary's span comes from the injected clock
  };
  await overload(log, 40);
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(/^WARN microbatch http: POST \/v2\/models\/gated\/infer → 503 queue_full: .*the queue is full/);
  expect(lines[1]).toBe('WARN microbatch http: 503 queue_full ×39 in the last 0.1 s');
});

test('JSON lines carry level, time, status, code and the count', async () => {
  const lines: string[] = [];
  const c = clock();
  await overload({ format: 'json', write: (l) => lines.push(l), now: c.now }, 5);
  const parsed = lines.map((l) => JSON.parse(l));
  expect(parsed).toHaveLength(2);
  expect(parsed[0]).toMatchObject({ time: '2026-01-01T00:00:00.000Z', level: 'warn', status: 503, code: 'queue_full', method: 'POST', path: '/v2/models/gated/infer' });
  expect(parsed[1]).toEqual({ time: '2026-01-01T00:00:00.000Z', level: 'warn', msg: 'microbatch http: 503 queue_full ×4 in the last 0 s', status: 503, code: 'queue_full', count: 4, window_s: 0 });
});

test("level 'error' drops refusals; a summary never hides a 500's first message", async () => {
  const lines: string[] = [];
  await overload({ level: 'error', write: (l) => lines.push(l) }, 3);
  expect(lines).toEqual([]);
  const failing = gatedHost({ promise: Promise.resolve() }, { fail: new Error('CUDA out of memory') });
  const s = createInferenceServer({ models: { failing }, log: { level: 'error', write: (l) => lines.push(l) } });
  const { port } = await s.listen(0);
  try {
    for (let i = 0; i < 3; i++) expect((await call(port, 'POST', '/v2/models/failing/infer', { body: gatedBody() })).status).toBe(500);
  } finally {
    await s.close();
  }
  expect(lines).toHaveLength(2);
  expect(lines[0]).toMatch(/^ERROR microbatch http: POST \/v2\/models\/failing\/infer → 500 model_error: the model failed: CUDA out of memory$/);
  expect(lines[1]).toMatch(/^ERROR microbatch http: 500 model_error ×2 in the last [\d.]+ s$/);
});

test("level 'debug' logs each 4xx; 'info' (the default) does not", async () => {
  const debug: string[] = [];
  const info: string[] = [];
  const host = gatedHost({ promise: Promise.resolve() });
  const s = createInferenceServer({ models: { gated: host }, log: { level: 'debug', write: (l) => debug.push(l) }, stopModelsOnClose: false });
  const s2 = createInferenceServer({ models: { gated: host }, log: (l) => info.push(l) });
  const [{ port }, { port: p2 }] = await Promise.all([s.listen(0), s2.listen(0)]);
  try {
    const bad = jsonInputs({ Z: { shape: [1, 2], data: [1, 2] } });
    expect((await call(port, 'POST', '/v2/models/gated/infer', { body: bad })).status).toBe(400);
    expect((await call(p2, 'POST', '/v2/models/gated/infer', { body: bad })).status).toBe(400);
  } finally {
    await Promise.all([s.close(), s2.close()]);
  }
  expect(debug).toEqual([expect.stringMatching(/^DEBUG microbatch http: POST \/v2\/models\/gated\/infer → 400 unknown_input: input "Z" is not an input/)]);
  expect(info).toEqual([]);
});

test('summary windows: each kind counted apart, a quiet kind forgotten, the next window restarts', () => {
  const lines: string[] = [];
  const c = clock();
  const logger = new ServerLogger({ write: (l) => lines.push(l), now: c.now, summaryWindowMs: 5_000 });
  for (let i = 0; i < 5; i++) logger.answer(503, 'queue_full', 'full', {});
  logger.answer(504, 'deadline_exceeded', 'late', {});
  c.advance(5_000);
  logger.flush();
  expect(lines).toEqual(['WARN full', 'WARN late', 'WARN microbatch http: 503 queue_full ×4 in the last 5 s']);
  logger.answer(503, 'queue_full', 'full again', {}); // still counted: the kind was busy last window
  c.advance(12_000);
  logger.flush();
  expect(lines.slice(3)).toEqual(['WARN microbatch http: 503 queue_full ×1 in the last 12 s']);
  c.advance(5_000);
  logger.flush(); // a quiet window: every kind is forgotten
  logger.answer(503, 'queue_full', 'full once more', {});
  logger.close();
  expect(lines.slice(4)).toEqual(['WARN full once more']);
});

test('bad log options are refused, naming the option', () => {
  const models = { gated: gatedHost({ promise: Promise.resolve() }) };
  expect(() => createInferenceServer({ models, log: { level: 'loud' as 'info' } })).toThrow(new TypeError("createInferenceServer: log.level must be one of debug, info, warn, error, silent, got \"loud\""));
  expect(() => createInferenceServer({ models, log: { format: 'xml' as 'json' } })).toThrow(new TypeError("createInferenceServer: log.format must be 'text' or 'json', got \"xml\""));
  expect(() => createInferenceServer({ models, log: { summaryWindowMs: 0 } })).toThrow(new RangeError('createInferenceServer: log.summaryWindowMs must be a positive number, got 0'));
});
