import type { AddressInfo } from 'node:net';
import express from 'express';
import { createInferenceServer, expressMiddleware, type InferenceServer } from '../../src/http';
import { call, gatedBody, gatedHost } from './helpers';
import { mountCases, type MountedApp } from './mount-cases';

// microbatch mounted in a real Express app: its routes answer as the standalone server's do,
// everything else is the app's, and backpressure and draining behave the same.

async function start(app: express.Express): Promise<MountedApp> {
  return new Promise((resolve) => {
    const http = app.listen(0, '127.0.0.1', () =>
      resolve({ port: (http.address() as AddressInfo).port, close: () => new Promise<void>((r) => http.close(() => r())) }),
    );
  });
}

async function mount(inference: InferenceServer, options: { prefix?: string; metrics?: boolean }): Promise<MountedApp> {
  const app = express();
  app.use(options.prefix ?? '/', expressMiddleware(inference, options));
  app.get('/', (_req, res) => void res.send('my app'));
  app.get(`${options.prefix ?? ''}/metrics`, (_req, res) => void res.send('app metrics'));
  return start(app);
}

mountCases(mount);

test('a body parser mounted before: raw bytes are used, a parsed body is refused with 500 body_consumed', async () => {
  const inference = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }) } });
  const app = express();
  app.use('/raw', express.raw({ type: '*/*' }), expressMiddleware(inference));
  app.use('/parsed', express.json(), expressMiddleware(inference));
  const { port, close } = await start(app);
  try {
    expect((await call(port, 'POST', '/raw/v2/models/gated/infer', { body: gatedBody(1, 1) })).json().outputs[0].data).toEqual([2, 2]);
    const r = await call(port, 'POST', '/parsed/v2/models/gated/infer', { body: gatedBody() });
    expect(r.status).toBe(500);
    expect(r.json()).toEqual({ code: 'body_consumed', error: 'the request body was already read by a body parser mounted before microbatch (express.json(), say); mount microbatch before body parsers' });
  } finally {
    await inference.close();
    await close();
  }
});
