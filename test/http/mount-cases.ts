/**
 * The behaviours every framework mounting must share with the standalone server, as one suite
 * that express.test.ts and fastify.test.ts run against their real framework.
 */
import { createInferenceServer, type InferenceServer } from '../../src/http';
import { call, gate, gatedBody, gatedHost } from './helpers';
import { waitFor } from '../support/wait-for';

/** An app with the inference server mounted (under `prefix` when given), listening on `port`. */
export interface MountedApp {
  readonly port: number;
  close(): Promise<void>;
}

/** Mounts `inference` in a fresh app of the framework, with a route `GET /` answering `my app`. */
export type Mount = (inference: InferenceServer, options: { prefix?: string; metrics?: boolean }) => Promise<MountedApp>;

async function withApp(mount: Mount, inference: InferenceServer, options: { prefix?: string; metrics?: boolean }, body: (port: number) => Promise<void>): Promise<void> {
  const app = await mount(inference, options);
  try {
    await body(app.port);
  } finally {
    await inference.close();
    await app.close();
  }
}

/** Defines the shared tests for one framework. */
export function mountCases(mount: Mount): void {
  test('infers, answers the protocol routes, and leaves every other path to the app', async () => {
    const inference = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }) } });
    await withApp(mount, inference, {}, async (port) => {
      const r = await call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody(1, 2) });
      expect(r.status).toBe(200);
      expect(r.json()).toMatchObject({ model_name: 'gated', model_version: '1', outputs: [{ name: 'Y', data: [2, 4] }] });
      expect((await call(port, 'GET', '/v2')).json()).toMatchObject({ name: 'microbatch' });
      expect((await call(port, 'GET', '/v2/health/ready')).json()).toMatchObject({ live: true, ready: true });
      expect((await call(port, 'GET', '/v2/models/nope')).json()).toMatchObject({ code: 'model_not_found' });
      expect((await call(port, 'GET', '/v2/bogus')).json()).toMatchObject({ code: 'not_found' });
      expect((await call(port, 'GET', '/')).text).toBe('my app');
      const appNotFound = await call(port, 'GET', '/elsewhere');
      expect(appNotFound.status).toBe(404);
      expect(appNotFound.text).not.toMatch(/no route for/); // the framework's own 404, not the server's
    });
  });

  test('under a path prefix, with /metrics left to the app', async () => {
    const inference = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }) }, metrics: () => 'microbatch 1\n' });
    await withApp(mount, inference, { prefix: '/inference', metrics: false }, async (port) => {
      expect((await call(port, 'POST', '/inference/v2/models/gated/infer', { body: gatedBody(3, 4) })).json().outputs[0].data).toEqual([6, 8]);
      expect((await call(port, 'GET', '/inference/metrics')).text).not.toBe('microbatch 1\n');
    });
  });

  test('backpressure: a full queue answers 503 queue_full with Retry-After, as standalone', async () => {
    const hold = gate();
    const host = gatedHost(hold, { maxBatchSize: 1, maxQueueSize: 1 });
    const inference = createInferenceServer({ models: { gated: host }, limits: { retryAfterSeconds: 2 } });
    await withApp(mount, inference, {}, async (port) => {
      const running = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      await waitFor(() => host.stats.running === 1);
      const queued = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      await waitFor(() => host.stats.queued === 1);
      const refused = await call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('2');
      expect(refused.json()).toMatchObject({ code: 'queue_full', error: expect.stringMatching(/the queue is full/) });
      hold.open();
      expect([(await running).status, (await queued).status]).toEqual([200, 200]);
    });
  });

  test('drain: close() answers new requests 503 shutting_down and waits for the one in flight', async () => {
    const hold = gate();
    const host = gatedHost(hold);
    const inference = createInferenceServer({ models: { gated: host } });
    await withApp(mount, inference, {}, async (port) => {
      const inFlight = call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody(5, 6) });
      await waitFor(() => host.stats.running === 1);
      let closed = false;
      const closing = inference.close().then(() => (closed = true));
      const refused = await call(port, 'POST', '/v2/models/gated/infer', { body: gatedBody() });
      expect(refused.status).toBe(503);
      expect(refused.json()).toMatchObject({ code: 'shutting_down', error: 'the server is shutting down and takes no new requests' });
      expect((await call(port, 'GET', '/v2/health/ready')).status).toBe(503);
      expect(closed).toBe(false);
      hold.open();
      expect((await inFlight).json().outputs[0].data).toEqual([10, 12]);
      await closing;
      // The models were stopped with the server.
      await expect(host.inference({ X: { type: 'float32', data: Float32Array.of(1, 2), dims: [1, 2] } })).rejects.toThrow(/stopped/);
    });
  });
}
