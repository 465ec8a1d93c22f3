import { createInferenceServer, createServingCore, handleShutdownSignals, ServingCore, ServingError } from '../../src/http';
import { call, gate, gatedBody, gatedHost } from '../http/helpers';
import { waitFor } from '../support/wait-for';

// One serving core under several transports: one registry, one gate, one drain. Two HTTP servers
// stand in for HTTP + gRPC here (the gRPC transport has tests of its own over a shared core).

/** Whether the host refuses new requests as stopped. */
function isStopped(host: ReturnType<typeof gatedHost>): Promise<boolean> {
  const row = { X: { type: 'float32' as const, data: new Float32Array(2), dims: [1, 2] } };
  return host.inference(row, { timeoutMs: 5_000 }).then(
    () => false,
    (e: Error) => /stopped/.test(e.message),
  );
}

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw');
}

test('createServingCore refuses options of the wrong shape, naming what came', () => {
  expect(() => createServingCore(null as never)).toThrow(new TypeError('createServingCore: expected options { models, generators?, limits?, log? }, got null'));
  expect(() => createServingCore({})).toThrow(new TypeError('createServingCore: expected `models` to be an object { name: host } with at least one model (or `generators` with one)'));
  const host = gatedHost(gate());
  expect(() => createServingCore({ models: { a: host }, generators: { a: host as never } })).toThrow(
    new TypeError('createServingCore: "a" is both in `models` and in `generators`; a name serves one model'),
  );
  expect(() => createServingCore({ models: { a: host }, limits: { timeoutMs: -1 } })).toThrow(new RangeError('createServingCore: limit `timeoutMs` must be a positive number, got -1'));
  expect(() => createServingCore({ models: { a: host }, log: { level: 'loud' as never } })).toThrow(/^createServingCore: log\.level must be one of debug, info, warn, error, silent, got "loud"$/);
});

test('createInferenceServer({ core }) refuses what the core already holds, and a core that is none', async () => {
  const host = gatedHost(gate());
  const core = createServingCore({ models: { gated: host } });
  expect(() => createInferenceServer({ core, models: { other: host }, limits: {} })).toThrow(
    new TypeError('createInferenceServer: `core` already holds the models, limits and log; pass `models`, `limits` to createServingCore instead'),
  );
  expect(() => createInferenceServer({ core: { close: async () => undefined } as never })).toThrow(
    new TypeError('createInferenceServer: expected `core` to be a ServingCore (from createServingCore), got an object'),
  );
  expect(createInferenceServer({ core }).core).toBe(core);
  await core.close();
});

test('lookups answer the protocol errors: unknown name or version, a generator asked to infer and the reverse', () => {
  const host = gatedHost(gate());
  const generator = { name: 'writer', generate: () => (async function* () {})(), stop: async () => undefined };
  const core = createServingCore({ models: { gated: host }, generators: { writer: generator as never } });
  expect(core.model('gated', undefined)).toBe(host);
  expect(core.model('gated', '1')).toBe(host);
  expect(thrown(() => core.model('nope', undefined))).toMatchObject({ code: 'not-found', reason: 'model_not_found', message: 'no model named "nope"; the served models are "gated", "writer"' });
  expect(thrown(() => core.model('gated', '7'))).toMatchObject({ code: 'not-found' });
  expect(thrown(() => core.model('writer', undefined))).toMatchObject({ code: 'invalid-argument', reason: 'not_a_batching_model' });
  expect(thrown(() => core.generator('gated', undefined))).toMatchObject({
    code: 'invalid-argument',
    reason: 'not_a_generator',
    message: 'model "gated" is not a generative model; send its requests to POST /v2/models/gated/infer',
  });
  expect(core.generator('writer', undefined).host).toBe(generator);
  expect(core.modelReady('gated', undefined)).toBe(true);
  expect(thrown(() => core.modelReady('nope', undefined))).toBeInstanceOf(ServingError);
  void core.close();
});

test('enter() admits up to maxConcurrentRequests over every transport, and refuses everything once the core closes', async () => {
  const core = createServingCore({ models: { gated: gatedHost(gate()) }, limits: { maxConcurrentRequests: 2 } });
  core.enter('gated');
  core.enter();
  expect(thrown(() => core.enter('gated'))).toMatchObject({ code: 'unavailable', reason: 'queue_full', retry: true });
  core.leave();
  core.enter();
  core.leave();
  core.leave();
  await core.close();
  expect(core.closing).toBe(true);
  expect(core.ready).toBe(false);
  expect(thrown(() => core.enter())).toMatchObject({ code: 'unavailable', reason: 'shutting_down', message: 'the server is shutting down and takes no new requests' });
});

test('two servers over one core: their requests share batches; closing a server leaves the core serving; closing the core drains both', async () => {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 4, maxConcurrentBatches: 1 });
  const core = createServingCore({ models: { gated: host } });
  const a = createInferenceServer({ core });
  const b = createInferenceServer({ core });
  const { port: pa } = await a.listen(0);
  const { port: pb } = await b.listen(0);
  try {
    // One request runs (held); four more, two through each server, wait in the one queue and
    // leave as one batch of four.
    const first = call(pa, 'POST', '/v2/models/gated/infer', { body: gatedBody(0, 0) });
    await waitFor(() => host.stats.running === 1);
    const answers = [call(pa, 'POST', '/v2/models/gated/infer', { body: gatedBody(1, 2) }), call(pb, 'POST', '/v2/models/gated/infer', { body: gatedBody(3, 4) })];
    answers.push(call(pa, 'POST', '/v2/models/gated/infer', { body: gatedBody(5, 6) }), call(pb, 'POST', '/v2/models/gated/infer', { body: gatedBody(7, 8) }));
    await waitFor(() => host.stats.queued === 4);
    hold.open();
    expect((await first).status).toBe(200);
    expect((await Promise.all(answers)).map((r) => r.json().outputs[0].data)).toEqual([
      [2, 4],
      [6, 8],
      [10, 12],
      [14, 16],
    ]);
    expect(host.stats).toMatchObject({ batches: 2, requests: 5 });
    // Server a closes: b and the model keep serving (a server stops only a core it made).
    await a.close();
    expect((await call(pb, 'POST', '/v2/models/gated/infer', { body: gatedBody(1, 1) })).status).toBe(200);
    expect(await isStopped(host)).toBe(false);
    // The core closes: b refuses at once, the model stops.
    await core.close();
    const refused = await call(pb, 'POST', '/v2/models/gated/infer', { body: gatedBody(1, 1) });
    expect(refused.status).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'shutting_down' });
    expect(await isStopped(host)).toBe(true);
  } finally {
    await Promise.all([a.close(), b.close(), core.close()]);
  }
});

test('handleShutdownSignals([server, core]): SIGTERM closes them together; the request in flight is answered first', async () => {
  const hold = gate();
  const host = gatedHost(hold);
  const core = createServingCore({ models: { gated: host } });
  const server = createInferenceServer({ core });
  const { port } = await server.listen(0);
  let closed = 0;
  const remove = handleShutdownSignals([server, core], { exit: false, onClosed: () => void closed++ });
  try {
    const inFlight = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody(3, 4) });
    await waitFor(() => host.stats.running === 1);
    process.emit('SIGTERM', 'SIGTERM');
    await waitFor(() => core.closing);
    hold.open();
    expect((await inFlight).json().outputs[0].data).toEqual([6, 8]);
    await waitFor(() => closed === 1);
    expect(await isStopped(host)).toBe(true);
  } finally {
    remove();
    await server.close();
  }
});

test('a core is a ServingCore, and the HTTP entry re-exports it', () => {
  expect(createServingCore({ models: { gated: gatedHost(gate()) } })).toBeInstanceOf(ServingCore);
});
