import { Agent } from 'node:http';
import { connect } from 'node:net';
import { createInferenceServer, handleShutdownSignals } from '../../src/http';
import { call, gate, gatedBody, gatedHost } from './helpers';
import { waitFor } from '../support/wait-for';

// close() and SIGTERM drain: requests already received are answered, new connections are refused,
// and the hosts stop after their queues are empty.

test('close({ drain: true }): in-flight requests are answered, new ones refused, then the host stops', async () => {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 2 });
  const server = createInferenceServer({ models: { gated: host } });
  const { port } = await server.listen(0);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  // A kept-alive connection, open before the close, to see what a request on it gets.
  expect((await call(port, 'GET', '/v2/health/ready', { agent })).status).toBe(200);

  const inFlight = [1, 2, 3, 4, 5].map((i) => call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody(i, -i) }));
  await waitFor(() => host.stats.running + host.stats.queued === 5);
  const closed = server.close({ drain: true });
  let closedYet = false;
  void closed.then(() => (closedYet = true));

  expect(server.ready).toBe(false);
  await expect(call(port, 'GET', '/v2/health/live')).rejects.toThrow(/ECONNREFUSED/);
  await new Promise((r) => setTimeout(r, 30));
  expect(closedYet).toBe(false); // still draining: the batch is held

  hold.open();
  const replies = await Promise.all(inFlight);
  replies.forEach((r, i) => {
    expect(r.status).toBe(200);
    expect(r.json().outputs[0].data).toEqual([2 * (i + 1), -2 * (i + 1)]);
  });
  await closed;
  expect(host.stats.requests).toBe(5);
  await expect(host.inference({ X: { type: 'float32', data: new Float32Array(2), dims: [1, 2] } })).rejects.toThrow(/stopped/);
  agent.destroy();
});

test('a request on a connection that was already open during the drain gets 503 shutting_down and Connection: close', async () => {
  const hold = gate();
  const host = gatedHost(hold);
  const server = createInferenceServer({ models: { gated: host } });
  const { port } = await server.listen(0);
  const body = JSON.stringify(gatedBody());
  const request = `POST /v2/models/gated/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  // A raw socket: the second request is pipelined on the connection the first one keeps busy, so
  // close() cannot close it as idle.
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString()));
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  try {
    socket.write(request);
    await waitFor(() => host.stats.running === 1);
    const closed = server.close();
    socket.write(request);
    await new Promise((r) => setTimeout(r, 20));
    hold.open();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
    await closed;
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200/);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503/);
    expect(answers[1]).toMatch(/\r\nConnection: close\r\n/i);
    expect(answers[1]).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(answers[1]).toContain('"code":"shutting_down"');
  } finally {
    hold.open();
    socket.destroy();
  }
});

test('close({ drain: false }): queued requests are answered 503 at once', async () => {
  const hold = gate();
  const host = gatedHost(hold, { maxBatchSize: 1 });
  const server = createInferenceServer({ models: { gated: host } });
  const { port } = await server.listen(0);
  const running = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
  await waitFor(() => host.stats.running === 1);
  const queued = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
  await waitFor(() => host.stats.queued === 1);
  const closed = server.close({ drain: false });
  const refused = await queued;
  expect(refused.status).toBe(503);
  expect(refused.json().code).toBe('model_stopped');
  hold.open();
  expect((await running).status).toBe(200); // running batches always finish
  await closed;
});

test('handleShutdownSignals: SIGTERM drains the server (exit disabled here), and can be removed', async () => {
  const hold = gate();
  const host = gatedHost(hold);
  const server = createInferenceServer({ models: { gated: host } });
  const { port } = await server.listen(0);
  const lines: string[] = [];
  let onClosed = 0;
  const before = process.listenerCount('SIGTERM');
  const remove = handleShutdownSignals(server, { exit: false, log: (l) => lines.push(l), onClosed: () => void onClosed++ });
  expect(process.listenerCount('SIGTERM')).toBe(before + 1);
  try {
    const inFlight = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody(3, 4) });
    await waitFor(() => host.stats.running === 1);
    // The listener, not a real signal: a real SIGTERM would reach the test runner too.
    process.emit('SIGTERM', 'SIGTERM');
    await expect(call(port, 'GET', '/v2/health/live')).rejects.toThrow(/ECONNREFUSED/);
    hold.open();
    expect((await inFlight).json().outputs[0].data).toEqual([6, 8]);
    await waitFor(() => onClosed === 1);
    expect(lines).toEqual(['microbatch: SIGTERM received, draining (no new connections)', 'microbatch: drained, exiting']);
  } finally {
    remove();
    hold.open();
  }
  expect(process.listenerCount('SIGTERM')).toBe(before);
});
