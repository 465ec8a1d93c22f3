import { createInferenceServer } from '../../src/http';
import { call, gatedBody, gatedHost } from './helpers';

// CORS is opt-in (`corsOrigins`): an allowed origin's preflight is answered 204 with what a browser
// needs, its answers let the page read the binary framing header; any other origin gets nothing.

const APP = 'https://app.example.com';
const preflight = (origin: string, extra: Record<string, string> = {}) => ({
  headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type, inference-header-content-length', ...extra },
});

test('without corsOrigins: no CORS headers, and OPTIONS answers 405 as before', async () => {
  const s = createInferenceServer({ models: { m: gatedHost({ promise: Promise.resolve() }) } });
  const { port } = await s.listen(0);
  try {
    const r = await call(port, 'OPTIONS', '/v2/models/m/infer', preflight(APP));
    expect(r.status).toBe(405);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    const ok = await call(port, 'POST', '/v2/models/m/infer', { body: gatedBody(), headers: { Origin: APP } });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBeUndefined();
  } finally {
    await s.close();
  }
});

test('with corsOrigins: preflight 204 for an allowed origin, nothing for another; answers carry Allow-Origin, Expose-Headers and Vary', async () => {
  const s = createInferenceServer({ models: { m: gatedHost({ promise: Promise.resolve() }) }, corsOrigins: [APP, 'http://localhost:5173'] });
  const { port } = await s.listen(0);
  try {
    const pre = await call(port, 'OPTIONS', '/v2/models/m/infer', preflight(APP));
    expect(pre.status).toBe(204);
    expect(pre.body.length).toBe(0);
    expect(pre.headers['access-control-allow-origin']).toBe(APP);
    expect(pre.headers['access-control-allow-methods']).toBe('GET, HEAD, POST, OPTIONS');
    expect(pre.headers['access-control-allow-headers']!.toLowerCase().split(', ')).toEqual(expect.arrayContaining(['content-type', 'inference-header-content-length', 'timeout-ms']));
    expect(pre.headers['access-control-max-age']).toBe('600');
    expect(pre.headers.vary).toBe('Origin');

    const other = await call(port, 'OPTIONS', '/v2/models/m/infer', preflight('https://evil.example.com'));
    expect(other.status).toBe(204);
    expect(Object.keys(other.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect(other.headers.vary).toBe('Origin');

    const ok = await call(port, 'POST', '/v2/models/m/infer', { body: gatedBody(), headers: { Origin: 'http://localhost:5173' } });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(ok.headers['access-control-expose-headers']!.toLowerCase()).toContain('inference-header-content-length');
    expect(ok.headers.vary).toBe('Origin');
    const gz = await call(port, 'POST', '/v2/models/m/infer', { body: gatedBody(), headers: { Origin: APP, 'Accept-Encoding': 'gzip' } });
    expect([gz.headers['content-encoding'], gz.headers.vary]).toEqual(['gzip', 'Origin, Accept-Encoding']);
    // An error answer is readable by the page too; another origin's answer carries no CORS header.
    const missing = await call(port, 'GET', '/v2/models/nope', { headers: { Origin: APP } });
    expect([missing.status, missing.headers['access-control-allow-origin']]).toEqual([404, APP]);
    const blocked = await call(port, 'GET', '/v2/health/live', { headers: { Origin: 'https://evil.example.com' } });
    expect([blocked.status, blocked.headers['access-control-allow-origin']]).toEqual([200, undefined]);
    // OPTIONS that is no preflight is routed as before.
    expect((await call(port, 'OPTIONS', '/v2/models/m/infer', { headers: { Origin: APP } })).status).toBe(405);
  } finally {
    await s.close();
  }
});

test("corsOrigins: '*' allows any origin; a malformed origin is refused when the server is made", async () => {
  const s = createInferenceServer({ models: { m: gatedHost({ promise: Promise.resolve() }) }, corsOrigins: ['*'] });
  const { port } = await s.listen(0);
  try {
    const pre = await call(port, 'OPTIONS', '/v2/health/ready', preflight('https://anywhere.example'));
    expect([pre.status, pre.headers['access-control-allow-origin']]).toEqual([204, 'https://anywhere.example']);
  } finally {
    await s.close();
  }
  const models = { m: gatedHost({ promise: Promise.resolve() }) };
  expect(() => createInferenceServer({ models, corsOrigins: ['https://app.example.com/'] })).toThrow(TypeError);
  expect(() => createInferenceServer({ models, corsOrigins: ['app.example.com'] })).toThrow(/a CORS origin is '\*' or a scheme, host and optional port such as 'https:\/\/app\.example\.com' \(no path, no trailing slash\), got/);
  expect(() => createInferenceServer({ models, corsOrigins: 'https://app.example.com' as unknown as string[] })).toThrow(/expected `corsOrigins` to be an array of origins/);
});
