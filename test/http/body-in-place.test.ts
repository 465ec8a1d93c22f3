/**
 * A binary request body is read into one buffer placed so that its tensors are aligned, and
 * decoded in place (no copy); anything else is copied, as before.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpError } from '../../src/http/http-error';
import { readBody } from '../../src/http/read-body';
import { decodeBinary } from '../../src/serving/raw-data';

/** A server whose one handler reads the body with `read`; resolves with what it read, or its error. */
async function serveOnce(read: (req: IncomingMessage) => Promise<Buffer>): Promise<{ server: Server; port: number; body: Promise<Buffer | Error> }> {
  let settle!: (v: Buffer | Error) => void;
  const body = new Promise<Buffer | Error>((r) => (settle = r));
  const server = createServer((req, res) => {
    read(req).then(settle, settle).finally(() => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, body };
}

/** Sends `parts` one write each, with Content-Length unless `chunked`. */
function send(port: number, parts: readonly Buffer[], chunked = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const total = parts.reduce((n, p) => n + p.length, 0);
    const req = request({ port, host: '127.0.0.1', method: 'POST', path: '/', headers: chunked ? {} : { 'Content-Length': total } }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    for (const p of parts) req.write(p);
    req.end();
  });
}

const bytes = (n: number, seed: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) & 255));

describe('readBody with alignAt', () => {
  test.each([0, 1, 5, 8, 13])('puts byte %i of a body sent in several writes on an 8-byte boundary, with every byte intact', async (alignAt) => {
    const parts = [bytes(70_000, 1), bytes(3, 2), bytes(50_001, 3)];
    const { server, port, body } = await serveOnce((req) => readBody(req, 1 << 20, alignAt));
    try {
      await send(port, parts);
      const got = (await body) as Buffer;
      expect(Buffer.isBuffer(got)).toBe(true);
      expect(got.equals(Buffer.concat(parts))).toBe(true);
      expect((got.byteOffset + alignAt) % 8).toBe(0);
      expect(got.buffer.byteLength - got.length).toBeLessThan(8); // a buffer of its own, not a pool's
    } finally {
      server.close();
    }
  });

  test('without Content-Length (chunked), reads the body as before', async () => {
    const parts = [bytes(1000, 4), bytes(2000, 5)];
    const { server, port, body } = await serveOnce((req) => readBody(req, 1 << 20, 3));
    try {
      await send(port, parts, true);
      expect(((await body) as Buffer).equals(Buffer.concat(parts))).toBe(true);
    } finally {
      server.close();
    }
  });

  test('a body past maxBytes is still refused with a 413 while it arrives', async () => {
    const { server, port, body } = await serveOnce((req) => {
      delete req.headers['content-length']; // as if it had not been announced: the limit is met while reading
      return readBody(req, 1000, 0);
    });
    try {
      await send(port, [bytes(600, 1), bytes(600, 2)], true).catch(() => undefined);
      const error = (await body) as Error & { status?: number };
      expect(error).toBeInstanceOf(HttpError);
      expect(error.status).toBe(413);
      expect(error.message).toBe('the request body exceeds the limit of 1000 bytes (maxBodyBytes)');
    } finally {
      server.close();
    }
  });
});

describe('decodeBinary in place', () => {
  test('aligned bytes that are most of their buffer are viewed, not copied', () => {
    const backing = new ArrayBuffer(4 * 1000 + 8);
    const wire = new Uint8Array(backing, 8, 4000);
    new Float32Array(backing, 8, 1000).set(Array.from({ length: 1000 }, (_, i) => i / 2));
    const data = decodeBinary('FP32', wire, 1000) as Float32Array;
    expect(data).toBeInstanceOf(Float32Array);
    expect(data.buffer).toBe(backing);
    expect(data.byteOffset).toBe(8);
    expect(Array.from(data.subarray(0, 3))).toEqual([0, 0.5, 1]);
  });

  test('unaligned bytes, or a small part of a large buffer, are copied into a buffer of their own', () => {
    const backing = new ArrayBuffer(4 * 100 + 1);
    const unaligned = new Uint8Array(backing, 1, 400);
    unaligned.set(new Uint8Array(new Float32Array([1.5, 2.5]).buffer), 0);
    const copied = decodeBinary('FP32', unaligned, 100) as Float32Array;
    expect(copied.buffer).not.toBe(backing);
    expect(Array.from(copied.subarray(0, 2))).toEqual([1.5, 2.5]);
    const big = new ArrayBuffer(4096);
    const small = decodeBinary('FP32', new Uint8Array(big, 0, 16), 4) as Float32Array;
    expect(small.buffer).not.toBe(big);
    expect(small.buffer.byteLength).toBe(16);
  });
});
