import { deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { acceptedCoding } from '../../src/http/compression';
import { createInferenceServer, type InferenceServer } from '../../src/http';
import { call, gatedBody, gatedHost } from './helpers';

// What Triton clients send and accept: compressed request bodies, compressed answers on request.

let server: InferenceServer;
let port: number;
const body = Buffer.from(JSON.stringify(gatedBody(1, 2)));

beforeAll(async () => {
  server = createInferenceServer({ models: { gated: gatedHost({ promise: Promise.resolve() }) }, limits: { maxBodyBytes: 2048 } });
  ({ port } = await server.listen(0));
});
afterAll(() => server.close());

const infer = (bytes: Buffer, headers: Record<string, string>) => call(port, 'POST', '/v2/models/gated/infer', { body: bytes, headers: { 'Content-Type': 'application/json', ...headers } });

test.each([
  ['gzip', gzipSync(body)],
  ['deflate', deflateSync(body)],
  ['identity', body],
])('a %s request body is read', async (encoding, bytes) => {
  const r = await infer(bytes, { 'Content-Encoding': encoding });
  expect(r.status).toBe(200);
  expect(r.json().outputs[0].data).toEqual([2, 4]);
});

test('answers are compressed as Accept-Encoding asks, and only then', async () => {
  const gz = await infer(body, { 'Accept-Encoding': 'br, gzip;q=0.8, deflate' });
  expect(gz.headers).toMatchObject({ 'content-encoding': 'gzip', vary: 'Accept-Encoding' });
  expect(JSON.parse(gunzipSync(gz.body).toString()).outputs[0].data).toEqual([2, 4]);
  const df = await infer(body, { 'Accept-Encoding': 'gzip;q=0, deflate' });
  expect(df.headers['content-encoding']).toBe('deflate');
  expect(JSON.parse(inflateSync(df.body).toString()).outputs[0].data).toEqual([2, 4]);
  const plain = await infer(body, {});
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.json().outputs[0].data).toEqual([2, 4]);
});

test('a binary answer keeps Inference-Header-Content-Length in uncompressed bytes', async () => {
  const req = { ...(gatedBody(1, 2) as object), outputs: [{ name: 'Y', parameters: { binary_data: true } }] };
  const r = await infer(gzipSync(JSON.stringify(req)), { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' });
  expect(r.status).toBe(200);
  const raw = gunzipSync(r.body);
  const headerLength = Number(r.headers['inference-header-content-length']);
  expect(JSON.parse(raw.subarray(0, headerLength).toString()).outputs[0].parameters.binary_data_size).toBe(8);
  expect(Array.from(new Float32Array(raw.buffer.slice(raw.byteOffset + headerLength, raw.byteOffset + raw.length)))).toEqual([2, 4]);
});

test('an unknown encoding is 415, a corrupt body 400, a body that inflates past maxBodyBytes 413', async () => {
  const br = await infer(body, { 'Content-Encoding': 'br' });
  expect(br.status).toBe(415);
  expect(br.headers['accept-encoding']).toBe('gzip, deflate');
  expect(br.json()).toEqual({ code: 'unsupported_content_encoding', error: 'unsupported Content-Encoding "br": send gzip, deflate or an uncompressed body' });
  const corrupt = await infer(Buffer.from('not gzip at all'), { 'Content-Encoding': 'gzip' });
  expect(corrupt.status).toBe(400);
  expect(corrupt.json()).toMatchObject({ code: 'invalid_body_encoding', error: expect.stringMatching(/^the request body is not valid gzip data: /) });
  const bomb = gzipSync(Buffer.alloc(1_000_000, 32)); // about 1 KB that inflates to 1 MB
  expect(bomb.length).toBeLessThan(2048);
  const big = await infer(bomb, { 'Content-Encoding': 'gzip' });
  expect(big.status).toBe(413);
  expect(big.json()).toEqual({ code: 'payload_too_large', error: 'the decompressed request body exceeds the limit of 2048 bytes (maxBodyBytes)' });
});

test('Accept-Encoding parsing: preference, q=0, wildcard, absence', () => {
  expect(acceptedCoding(undefined)).toBeUndefined();
  expect(acceptedCoding('identity')).toBeUndefined();
  expect(acceptedCoding('deflate, gzip')).toBe('gzip');
  expect(acceptedCoding('gzip;q=0.000, deflate;q=0.5')).toBe('deflate');
  expect(acceptedCoding('*')).toBe('gzip');
});
