import { decodeMessage, encodeMessage, type SocketTensorReviver } from '../wire/codec';
import { FrameDecoder } from '../wire/framing';
import { CLIENT_ID } from './keys';

/**
 * The entries microbatch writes to Redis. A request entry carries its front end, a request id, its
 * time limit, its priority and the input as one socket-codec frame (JSON plus raw tensor bytes), so
 * tensors and errors travel exactly as between processes on one machine. Entries are data only:
 * decoding builds plain values, typed arrays, tensors and errors, and never loads code.
 * @internal
 */

/** The wire version, so that a replica can refuse entries of a future, different layout. */
export const WIRE_VERSION = '1';

/** A request as a front end writes it. */
export interface RequestFields {
  readonly frontEnd: string;
  readonly requestId: string;
  /** Relative time limit in ms, counted by the server from the entry id's time. */
  readonly timeoutMs: number | undefined;
  readonly priority: number | undefined;
}

/** The field/value pairs of a request entry, for XADD. */
export function encodeRequest(fields: RequestFields, item: unknown): Array<string | Buffer> {
  return [
    'v', WIRE_VERSION,
    'f', fields.frontEnd,
    'r', fields.requestId,
    't', fields.timeoutMs === undefined ? '' : String(fields.timeoutMs),
    'p', fields.priority === undefined ? '' : String(fields.priority),
    'm', Buffer.concat(encodeMessage({ t: 'req' }, item)),
  ];
}

/** A request entry as a replica reads it: decoded, or what was wrong with it. */
export type DecodedRequest =
  | ({ readonly ok: true; readonly item: unknown } & RequestFields)
  | { readonly ok: false; readonly problem: string; readonly frontEnd: string | undefined; readonly requestId: string | undefined };

/** Decodes a request entry's fields (as Buffers). Never throws: a bad entry is described. */
export function decodeRequest(raw: readonly Buffer[], maxEntryBytes: number, revive: SocketTensorReviver): DecodedRequest {
  const f = new Map<string, Buffer>();
  for (let i = 0; i + 1 < raw.length; i += 2) f.set((raw[i] as Buffer).toString(), raw[i + 1] as Buffer);
  // The reply address is read first: with it, even a broken entry gets an answer.
  const frontEnd = f.get('f')?.toString();
  const requestId = f.get('r')?.toString();
  const replyable = frontEnd !== undefined && CLIENT_ID.test(frontEnd) && requestId !== undefined && /^\d{1,16}$/.test(requestId);
  const bad = (problem: string): DecodedRequest => ({ ok: false, problem, frontEnd: replyable ? frontEnd : undefined, requestId: replyable ? requestId : undefined });
  const version = f.get('v')?.toString();
  if (version !== WIRE_VERSION) return bad(`an entry of wire version ${JSON.stringify(version ?? null)}; this replica reads version ${WIRE_VERSION}`);
  if (!replyable) return bad('an entry without a valid front-end id and request id');
  const timeout = f.get('t')?.toString() ?? '';
  const priority = f.get('p')?.toString() ?? '';
  const timeoutMs = timeout === '' ? undefined : Number(timeout);
  const prio = priority === '' ? undefined : Number(priority);
  if (timeoutMs !== undefined && !(timeoutMs > 0)) return bad(`an entry with an invalid time limit ${JSON.stringify(timeout)}`);
  if (prio !== undefined && !Number.isFinite(prio)) return bad(`an entry with an invalid priority ${JSON.stringify(priority)}`);
  const payload = f.get('m');
  if (payload === undefined) return bad('an entry without a payload');
  if (payload.byteLength > maxEntryBytes) return bad(`an entry of ${payload.byteLength} bytes, over maxEntryBytes (${maxEntryBytes})`);
  try {
    return { ok: true, frontEnd, requestId, timeoutMs, priority: prio, item: decodeWhole(payload, maxEntryBytes, revive) };
  } catch (e) {
    return bad(`an entry whose payload does not decode (${(e as Error).message})`);
  }
}

/** A reply's payload: the result, or the error (error classes survive, as over the socket). */
export function encodeReply(result: { value: unknown } | { error: Error }): Buffer {
  return Buffer.concat('error' in result ? encodeMessage({ t: 'err' }, result.error) : encodeMessage({ t: 'res' }, result.value));
}

/** A decoded reply: the request it answers, and its result or error. */
export type DecodedReply = { readonly requestId: string; readonly value: unknown } | { readonly requestId: string; readonly error: Error };

/** Decodes a reply entry's fields; throws on one that is malformed. */
export function decodeReply(raw: readonly Buffer[], maxEntryBytes: number, revive: SocketTensorReviver): DecodedReply {
  const f = new Map<string, Buffer>();
  for (let i = 0; i + 1 < raw.length; i += 2) f.set((raw[i] as Buffer).toString(), raw[i + 1] as Buffer);
  const requestId = f.get('r')?.toString();
  const payload = f.get('m');
  if (requestId === undefined || payload === undefined) throw new Error('a reply without a request id or a payload');
  const frame = decodeFrame(payload, maxEntryBytes);
  const msg = decodeMessage(frame, revive);
  if (msg.t === 'err') return { requestId, error: msg.value instanceof Error ? msg.value : new Error(`the replica rejected the request with ${String(msg.value)}`) };
  if (msg.t === 'res') return { requestId, value: msg.value };
  throw new Error(`a reply of unknown type ${JSON.stringify(msg.t)}`);
}

function decodeFrame(payload: Buffer, maxEntryBytes: number): ReturnType<FrameDecoder['push']>[number] {
  const frames = new FrameDecoder(maxEntryBytes).push(payload);
  if (frames.length !== 1) throw new Error(frames.length === 0 ? 'a truncated payload' : 'a payload with trailing frames');
  return frames[0]!;
}

function decodeWhole(payload: Buffer, maxEntryBytes: number, revive: SocketTensorReviver): unknown {
  const msg = decodeMessage(decodeFrame(payload, maxEntryBytes), revive);
  if (msg.t !== 'req') throw new Error(`a payload of type ${JSON.stringify(msg.t)} where a request was expected`);
  return msg.value;
}
