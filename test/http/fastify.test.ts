import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { createInferenceServer, fastifyPlugin, type InferenceServer } from '../../src/http';
import { call, gatedBody, gatedHost } from './helpers';
import { mountCases, type MountedApp } from './mount-cases';

// microbatch registered as a plugin in a real Fastify app: its routes answer as the standalone
// server's do, everything else is the app's, and backpressure and draining behave the same.

async function mount(inference: InferenceServer, options: { prefix?: string; metrics?: boolean }): Promise<MountedApp> {
  const app = Fastify();
  await app.register(fastifyPlugin(inference, options), options.prefix === undefined ? {} : { prefix: options.prefix });
  app.get('/', async () => 'my app');
  if (options.metrics === false) app.get(`${options.prefix ?? ''}/metrics`, async () => 'app metrics');
  app.post('/echo', async (request) => request.body); // the app's own JSON parsing is untouched
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
}

mountCases(mount);

test("the app's own routes keep Fastify's body parsing; the plugin's routes read the body themselves", async () => {
  const inference = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }) }, limits: { maxBodyBytes: 200 } });
  const { port, close } = await mount(inference, {});
  try {
    expect((await call(port, 'POST', '/echo', { body: { a: 1 } })).json()).toEqual({ a: 1 });
    // The server's own maxBodyBytes applies, not Fastify's bodyLimit.
    const big = await call(port, 'POST', '/v2/models/gated/infer', { body: { ...(gatedBody() as object), pad: 'x'.repeat(300) } });
    expect(big.status).toBe(413);
    expect(big.json()).toMatchObject({ code: 'payload_too_large', error: expect.stringMatching(/exceeds the limit of 200 bytes/) });
  } finally {
    await inference.close();
    await close();
  }
});
