import { HostStoppedError } from '../../src/core/errors';
import { createGrpcServer, createServingCore, REASON_KEY, type GrpcServerOptions } from '../../src/grpc';
import { gate, gatedHost } from '../http/helpers';
import { waitFor } from '../support/wait-for';
import { connect, failure, grpc, type Client, type Message } from './client';

// Queue, deadline, cancellation, size limits and closing, on a host whose batches wait for a gate.

const row = (a: number, b: number): Message => ({ model_name: 'gated', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [a, b] } }] });
const out = (res: Message): number[] => res.outputs[0].contents.fp32_contents;

interface Fixture {
  readonly host: ReturnType<typeof gatedHost>;
  readonly client: Client;
  readonly hold: { open(): void };
  readonly server: ReturnType<typeof createGrpcServer>;
  /** Sends row [1, 2] and waits until it runs, so that the next calls queue behind it; `answer` is its answer. */
  occupy(): Promise<{ answer: Promise<Message> }>;
}

/** Serves a gated host (one row per batch) over gRPC for `body`, then opens the gate and closes. */
async function withGated(hostOptions: { maxQueueSize?: number }, limits: GrpcServerOptions['limits'], body: (f: Fixture) => Promise<void>): Promise<void> {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 1, ...hostOptions });
  const server = createGrpcServer({ models: { gated: host }, ...(limits === undefined ? {} : { limits }) });
  const client = connect((await server.listen(0)).port);
  const occupy = async (): Promise<{ answer: Promise<Message> }> => {
    const answer = client.unary('ModelInfer', row(1, 2));
    await waitFor(() => host.stats.running === 1);
    return { answer };
  };
  try {
    await body({ host, client, hold, server, occupy });
  } finally {
    hold.open();
    client.close();
    await server.close();
  }
}

test('a full host queue: UNAVAILABLE queue_full with the REST message; the queued calls are answered', () =>
  withGated({ maxQueueSize: 1 }, undefined, async ({ host, client, hold, occupy }) => {
    const running = await occupy();
    const queued = client.unary('ModelInfer', row(3, 4));
    await waitFor(() => host.stats.queued === 1);
    const e = await failure(client.unary('ModelInfer', row(5, 6)));
    expect([grpc.status[e.code], e.metadata.get(REASON_KEY)]).toEqual(['UNAVAILABLE', ['queue_full']]);
    expect(e.details).toMatch(/the queue is full \(maxQueueSize is 1 waiting requests\)/);
    hold.open();
    expect(out(await running.answer)).toEqual([2, 4]);
    expect(out(await queued)).toEqual([6, 8]);
  }));

test('limits.maxConcurrentRequests: UNAVAILABLE queue_full before the host sees the call', () =>
  withGated({}, { maxConcurrentRequests: 2 }, async ({ host, client, hold, occupy }) => {
    const a = await occupy();
    const b = client.unary('ModelInfer', row(3, 4));
    await waitFor(() => host.stats.queued === 1);
    const e = await failure(client.unary('ModelInfer', row(5, 6)));
    expect([e.code, e.details]).toEqual([grpc.status.UNAVAILABLE, 'the server is already handling 2 inference requests (limits.maxConcurrentRequests); retry later']);
    expect({ running: host.stats.running, queued: host.stats.queued }).toEqual({ running: 1, queued: 1 });
    hold.open();
    await Promise.all([a.answer, b]);
    expect(out(await client.unary('ModelInfer', row(5, 6)))).toEqual([10, 12]);
  }));

test("a client's deadline is the request's time limit: DEADLINE_EXCEEDED, and the request leaves the queue", () =>
  withGated({}, undefined, async ({ host, client, hold, occupy }) => {
    const running = await occupy();
    const late = client.unary('ModelInfer', row(3, 4), { deadline: Date.now() + 300 });
    await waitFor(() => host.stats.queued === 1);
    expect(grpc.status[(await failure(late)).code]).toBe('DEADLINE_EXCEEDED');
    await waitFor(() => host.stats.queued === 0); // out of the queue before its turn
    hold.open();
    expect(out(await running.answer)).toEqual([2, 4]);
    // The late request never ran.
    expect({ ran: host.stats.requests, timedOut: host.stats.rejected.deadline + host.stats.rejected.aborted }).toEqual({ ran: 1, timedOut: 1 });
  }));

test("parameters.timeout_ms (and Triton's timeout in µs) set the time limit: DEADLINE_EXCEEDED from the server", () =>
  withGated({}, undefined, async ({ host, client, hold, occupy }) => {
    const running = await occupy();
    const ms = await failure(client.unary('ModelInfer', { ...row(3, 4), parameters: { timeout_ms: { int64_param: 200 } } }));
    expect([grpc.status[ms.code], ms.metadata.get(REASON_KEY)]).toEqual(['DEADLINE_EXCEEDED', ['deadline_exceeded']]);
    const us = await failure(client.unary('ModelInfer', { ...row(3, 4), parameters: { timeout: { int64_param: 200_000 } } }));
    expect(grpc.status[us.code]).toBe('DEADLINE_EXCEEDED');
    expect(host.stats.queued).toBe(0);
    hold.open();
    await running.answer;
  }));

test('a cancelled call takes its request out of the queue: it never reaches the model', () =>
  withGated({}, undefined, async ({ host, client, hold, occupy }) => {
    const running = await occupy();
    const { call, answer } = client.start('ModelInfer', row(3, 4));
    await waitFor(() => host.stats.queued === 1);
    call.cancel();
    expect((await failure(answer)).code).toBe(grpc.status.CANCELLED);
    await waitFor(() => host.stats.queued === 0);
    hold.open();
    await running.answer;
    expect({ ran: host.stats.requests, aborted: host.stats.rejected.aborted }).toEqual({ ran: 1, aborted: 1 });
  }));

test('a message over limits.maxBodyBytes: RESOURCE_EXHAUSTED naming both sizes', () =>
  withGated({}, { maxBodyBytes: 1024 }, async ({ client, hold }) => {
    hold.open();
    const big = { model_name: 'gated', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [Buffer.alloc(2048)] };
    const e = await failure(client.unary('ModelInfer', big));
    expect(grpc.status[e.code]).toBe('RESOURCE_EXHAUSTED');
    expect(e.details).toMatch(/^Received message larger than max \(\d+ vs 1024\)$/);
    expect(out(await client.unary('ModelInfer', row(1, 2)))).toEqual([2, 4]); // the server goes on
  }));

test('close({ drain: false }) cancels the calls in flight and stops its own core at once', () =>
  withGated({}, undefined, async ({ host, client, hold, server, occupy }) => {
    const inFlight = await occupy();
    const queued = client.unary('ModelInfer', row(3, 4));
    await waitFor(() => host.stats.queued === 1);
    const closed = server.close({ drain: false });
    expect(grpc.status[(await failure(inFlight.answer)).code]).toBe('CANCELLED');
    expect(grpc.status[(await failure(queued)).code]).toBe('CANCELLED');
    expect(server.ready).toBe(false);
    hold.open(); // the batch already running ends; the queued request was dropped
    await closed;
    expect(host.stats.requests).toBe(1);
    expect(server.close()).toBe(server.close()); // idempotent
  }));

test('a shared core closing drains: a call in flight is answered, one arriving gets UNAVAILABLE, then the hosts stop', async () => {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 1 });
  const core = createServingCore({ models: { gated: host } });
  const server = createGrpcServer({ core });
  const client = connect((await server.listen(0)).port);
  try {
    const inFlight = client.unary('ModelInfer', row(1, 2));
    await waitFor(() => host.stats.running === 1);
    const closing = core.close({ drain: true, timeoutMs: 10_000 });
    const e = await failure(client.unary('ModelInfer', row(3, 4)));
    expect([grpc.status[e.code], e.details, e.metadata.get(REASON_KEY)]).toEqual(['UNAVAILABLE', 'the server is shutting down and takes no new requests', ['shutting_down']]);
    expect(await client.unary('ServerReady', {})).toEqual({ ready: false });
    hold.open();
    expect(out(await inFlight)).toEqual([2, 4]);
    await closing;
    await expect(host.inference({ X: { type: 'float32', data: new Float32Array(2), dims: [1, 2] } })).rejects.toBeInstanceOf(HostStoppedError);
  } finally {
    hold.open();
    client.close();
    await server.close();
  }
});

test('options: core beside its own options, a core that is none, or no options at all are refused by name', async () => {
  const core = createServingCore({ models: { gated: gatedHost(gate()) } });
  expect(() => createGrpcServer({ core, limits: { maxBodyBytes: 1 } })).toThrow("createGrpcServer: `limits` cannot be given with `core`; they are the core's own options (give them to createServingCore)");
  expect(() => createGrpcServer({ core: {} as never })).toThrow('createGrpcServer: `core` must be a ServingCore (from createServingCore), got an object');
  expect(() => createGrpcServer(null as never)).toThrow('createGrpcServer: expected options { models, ... } or { core }, got null');
  expect(() => createGrpcServer({})).toThrow('createGrpcServer: expected `models` to be an object { name: host } with at least one model (or `generators` with one)');
  await core.close({ drain: false });
});

test('failures are logged as REST logs them, under "microbatch grpc", at the level of their code', async () => {
  const lines: string[] = [];
  const core = createServingCore({ models: { gated: gatedHost(gate()) }, log: { level: 'debug', format: 'json', write: (l) => lines.push(l) } });
  const server = createGrpcServer({ core });
  const client = connect((await server.listen(0)).port);
  try {
    await failure(client.unary('ModelInfer', { ...row(1, 2), model_name: 'nope' }));
    await failure(client.unary('ModelConfig', { name: 'gated', version: '9' }));
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toEqual([
      expect.objectContaining({ level: 'debug', status: 'NOT_FOUND', code: 'model_not_found', rpc: 'ModelInfer', model: 'nope', msg: 'microbatch grpc: ModelInfer "nope" → NOT_FOUND model_not_found: no model named "nope"; the served models are "gated"' }),
      expect.objectContaining({ level: 'debug', status: 'NOT_FOUND', code: 'model_version_not_found', rpc: 'ModelConfig', model: 'gated' }),
    ]);
  } finally {
    client.close();
    await server.close({ drain: false });
  }
});
