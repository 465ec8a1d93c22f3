import type { IncomingMessage, ServerResponse } from 'node:http';
import { acceptedCoding, compress, decodeBody } from './compression';
import { decodeRequest, invalidArgument, ownTimeout, requestTimeout, servedVersion, type InferenceServable, type ResolvedLimits } from '../serving';
import { encodeResponse, HEADER_LENGTH } from './encode-response';
import { toHttpError } from './http-error';
import { readBody } from './read-body';
import { send } from './respond';

/** The header a client may send to set its own time limit, in milliseconds. */
export const TIMEOUT_HEADER = 'timeout-ms';

/** What the inference route needs from the server. @internal */
export interface InferContext {
  readonly modelName: string;
  readonly host: InferenceServable;
  readonly limits: ResolvedLimits;
  readonly int64As: 'number' | 'string';
}

/** Splits the body into the JSON header and the binary section (binary extension), or refuses it. */
function bodyParts(req: IncomingMessage): 'json' | number {
  const headerLength = req.headers[HEADER_LENGTH];
  if (headerLength !== undefined) {
    const n = Number(headerLength);
    if (!/^\d+$/.test(String(headerLength)) || !Number.isSafeInteger(n)) {
      throw invalidArgument('invalid_header', `Inference-Header-Content-Length must be a byte count, got ${JSON.stringify(headerLength)}`);
    }
    return n;
  }
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === '' || type === 'application/json' || type.endsWith('+json')) return 'json';
  throw invalidArgument(
    'unsupported_content_type',
    `unsupported Content-Type ${JSON.stringify(type)}: send application/json (KServe v2 JSON), or binary tensors with the Inference-Header-Content-Length header`,
  );
}

/** The body as JSON, or a 400 naming what is wrong. @internal */
export function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw invalidArgument('invalid_json', `the request body is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * The time limit to pass with a request: the client's (header, else body) within the server's
 * limits, or `undefined` where the host's own limit is the shorter one and holds. @internal
 */
export function clientTimeout(req: IncomingMessage, fromBody: number | undefined, limits: ResolvedLimits, hostTimeoutMs: number | undefined): number | undefined {
  const header = req.headers[TIMEOUT_HEADER];
  let asked = fromBody;
  if (header !== undefined) {
    const n = Number(header);
    if (!(n > 0)) throw invalidArgument('invalid_header', `the Timeout-Ms header must be a positive number of milliseconds, got ${JSON.stringify(header)}`);
    asked = n;
  }
  return requestTimeout(asked, limits, hostTimeoutMs);
}

/**
 * `POST /v2/models/{name}[/versions/{v}]/infer`: reads and checks the request, queues it on the host (so it is
 * batched with concurrent ones), and answers the outputs. A client that disconnects aborts its
 * request, which leaves the queue if it has not started.
 * @internal
 */
export async function handleInfer(req: IncomingMessage, res: ServerResponse, ctx: InferContext): Promise<void> {
  const parts = bodyParts(req);
  const body = await decodeBody(req.headers['content-encoding'], await readBody(req, ctx.limits.maxBodyBytes, parts === 'json' || req.headers['content-encoding'] !== undefined ? undefined : parts), ctx.limits.maxBodyBytes);
  const headerLength = parts === 'json' ? body.length : parts;
  if (headerLength > body.length) {
    throw invalidArgument('invalid_header', `Inference-Header-Content-Length is ${headerLength}, but the body has only ${body.length} bytes`);
  }
  const json = parseJson(body.subarray(0, headerLength));
  const request = decodeRequest(json, {
    modelName: ctx.modelName,
    host: ctx.host,
    maxElements: ctx.limits.maxElements,
    binary: parts === 'json' ? undefined : body.subarray(headerLength),
  });
  const timeoutMs = clientTimeout(req, request.timeoutMs, ctx.limits, ownTimeout(ctx.host));

  const abort = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort(new Error('the client closed the connection'));
  };
  res.once('close', onClose);
  try {
    const results = await ctx.host.inference(request.feeds, { ...(timeoutMs === undefined ? {} : { timeoutMs }), signal: abort.signal });
    // The version serving when the answer is written: around a reload, a request accepted before the
    // swap may be answered by either version (docs/http.md, "Versions").
    const out = encodeResponse(ctx.modelName, servedVersion(ctx.host), request, results, ctx.int64As);
    const coding = acceptedCoding(req.headers['accept-encoding']);
    // Inference-Header-Content-Length keeps counting uncompressed bytes, as Triton's clients expect.
    if (coding === undefined) send(res, 200, out.headers, out.body);
    else {
      const vary = res.getHeader('Vary'); // `Origin` when CORS is on
      send(res, 200, { ...out.headers, 'Content-Encoding': coding, Vary: vary === undefined ? 'Accept-Encoding' : `${String(vary)}, Accept-Encoding` }, await compress(out.body, coding));
    }
  } catch (e) {
    throw toHttpError(e, ctx.limits.retryAfterSeconds);
  } finally {
    res.off('close', onClose);
  }
}
