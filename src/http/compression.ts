import { promisify } from 'node:util';
import { deflate, gzip, inflate, gunzip } from 'node:zlib';
import { HttpError } from './http-error';

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

/** The encodings the server reads in requests and writes in answers. @internal */
export type ContentCoding = 'gzip' | 'deflate';

/**
 * Decompresses a request body sent with `Content-Encoding: gzip` or `deflate` (Triton clients do
 * this), bounding the decompressed size by `maxBytes` too, so a small body cannot expand into a
 * huge one. No encoding or `identity` returns the body as is; another encoding is a 415.
 * @internal
 */
export async function decodeBody(encoding: string | undefined, body: Buffer, maxBytes: number): Promise<Buffer> {
  const coding = (encoding ?? 'identity').trim().toLowerCase();
  if (coding === 'identity' || coding === '') return body;
  if (coding !== 'gzip' && coding !== 'deflate') {
    throw new HttpError(415, 'unsupported_content_encoding', `unsupported Content-Encoding ${JSON.stringify(encoding)}: send gzip, deflate or an uncompressed body`, { 'Accept-Encoding': 'gzip, deflate' });
  }
  try {
    return await (coding === 'gzip' ? gunzipAsync : inflateAsync)(body, { maxOutputLength: maxBytes });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new HttpError(413, 'payload_too_large', `the decompressed request body exceeds the limit of ${maxBytes} bytes (maxBodyBytes)`);
    }
    throw new HttpError(400, 'invalid_body_encoding', `the request body is not valid ${coding} data: ${(e as Error).message}`);
  }
}

/**
 * The coding to answer with, from `Accept-Encoding`: gzip when accepted, else deflate, else none.
 * A coding with `q=0` is refused, as the header's grammar says.
 * @internal
 */
export function acceptedCoding(header: string | undefined): ContentCoding | undefined {
  if (header === undefined) return undefined;
  const accepted = new Set<string>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    accepted.add(name);
  }
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  if (accepted.has('deflate')) return 'deflate';
  return undefined;
}

/** Compresses an answer body with `coding`. @internal */
export function compress(body: Buffer, coding: ContentCoding): Promise<Buffer> {
  return coding === 'gzip' ? gzipAsync(body) : deflateAsync(body);
}
