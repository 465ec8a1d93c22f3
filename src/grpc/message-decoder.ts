import { giveBuffer, takeBuffer } from '../tensor/buffer-pool';

/**
 * gRPC's message framing read into reused buffers. grpc-js's decoder keeps the chunks a message
 * arrives in and joins them into a fresh buffer per message; for a 110 KiB classifier request that
 * is one large allocation per call, and under load those allocations are what drives V8's
 * collections (docs/performance.md, section 11: a bare http2 server ran 633 scavenges for external
 * memory in 5 s when it joined each request's chunks, 231 when it did not; with `ModelInfer`'s
 * buffers reused the server ran 3 mark-compacts in 6 s instead of 54–77, and answered 2–8% more
 * calls a second). This decoder reads each message straight into a buffer of its exact framed
 * size, taken from the batch buffer pool when one is free, and `ModelInfer` gives it back once its
 * answer is serialized (`decodeRemembering`, `answered`, `encodeReleasing`): only then does nothing
 * read it any more. Nothing else of a message is kept: the compress flag is a number, not a view
 * into the socket read buffer it came in (which would keep that buffer alive for the whole call).
 *
 * grpc-js looks its `StreamDecoder` up per call, for servers and clients alike, so this class
 * behaves exactly like grpc-js's (same output: each message with its 5-byte prefix; same error when
 * a message is over the limit; same fields that release-reads.ts reads) but for where the bytes go.
 * A buffer that nobody gives back is an ordinary buffer, collected as any other.
 */

/** grpc-js's `ReadState`, by value. */
const NO_DATA = 0;
const READING_SIZE = 1;
const READING_MESSAGE = 2;

/** Buffers this decoder handed out, which alone may go back to the pool (and only once). */
const handedOut = new WeakSet<ArrayBuffer>();

/**
 * The framed message buffers (`ModelInfer` requests) the pool keeps per byte size: one per call in
 * flight at 64 connections, and some, but at most `KEEP_BYTES_PER_SIZE` of a size (an idle server
 * keeps that much of each message size it served).
 */
const KEEP_PER_SIZE = 96;
const KEEP_BYTES_PER_SIZE = 32 * 1024 * 1024;

/** A message of `framed` bytes (prefix included): a pooled buffer of that size, or a fresh one. */
function messageBuffer(framed: number): Buffer {
  const pooled = takeBuffer(framed);
  const buffer = pooled === undefined ? Buffer.allocUnsafeSlow(framed) : Buffer.from(pooled, 0, framed);
  handedOut.add(buffer.buffer as ArrayBuffer);
  return buffer;
}

/**
 * Gives the buffer a decoded message was read into back to the pool, when this decoder made it and
 * it is whole: the caller promises that nothing reads `message` (or anything viewing its memory)
 * any more. Returns whether it went back.
 * @internal
 */
export function releaseMessageBuffer(message: Uint8Array): boolean {
  const buffer = message.buffer as ArrayBuffer;
  if (!handedOut.has(buffer)) return false;
  handedOut.delete(buffer);
  giveBuffer(buffer, Math.max(1, Math.min(KEEP_PER_SIZE, Math.floor(KEEP_BYTES_PER_SIZE / buffer.byteLength))));
  return true;
}

/**
 * A drop-in for grpc-js's `StreamDecoder` (its public fields kept, by name, for release-reads.ts).
 * @internal
 */
export class PooledStreamDecoder {
  readState = NO_DATA;
  readCompressFlag: Buffer = Buffer.alloc(1);
  readPartialSize: Buffer = Buffer.alloc(4);
  readSizeRemaining = 4;
  readMessageSize = 0;
  /** Always empty, so never renewed: the bytes go straight into the message's buffer (grpc-js keeps its chunks here). */
  readPartialMessage: Buffer[] = [];
  readMessageRemaining = 0;
  #message: Buffer | undefined = undefined;
  /** The message's compress-flag byte. `readCompressFlag` is left alone: a view there would hold a socket read buffer. */
  #flag = 0;

  constructor(private readonly maxReadMessageLength: number) {}

  write(data: Buffer): Buffer[] {
    let head = 0;
    const result: Buffer[] = [];
    while (head < data.length) {
      switch (this.readState) {
        case NO_DATA:
          this.#flag = data[head] as number;
          head += 1;
          this.readState = READING_SIZE;
          this.readPartialSize.fill(0);
          this.readSizeRemaining = 4;
          this.readMessageSize = 0;
          this.readMessageRemaining = 0;
          break;
        case READING_SIZE: {
          const n = Math.min(data.length - head, this.readSizeRemaining);
          data.copy(this.readPartialSize, 4 - this.readSizeRemaining, head, head + n);
          this.readSizeRemaining -= n;
          head += n;
          if (this.readSizeRemaining === 0) {
            this.readMessageSize = this.readPartialSize.readUInt32BE(0);
            if (this.maxReadMessageLength !== -1 && this.readMessageSize > this.maxReadMessageLength) {
              throw new Error(`Received message larger than max (${this.readMessageSize} vs ${this.maxReadMessageLength})`);
            }
            const message = (this.#message = messageBuffer(this.readMessageSize + 5));
            message[0] = this.#flag;
            this.readPartialSize.copy(message, 1);
            this.readMessageRemaining = this.readMessageSize;
            if (this.readMessageRemaining > 0) this.readState = READING_MESSAGE;
            else this.#emit(result);
          }
          break;
        }
        case READING_MESSAGE: {
          const n = Math.min(data.length - head, this.readMessageRemaining);
          const message = this.#message as Buffer;
          data.copy(message, 5 + this.readMessageSize - this.readMessageRemaining, head, head + n);
          this.readMessageRemaining -= n;
          head += n;
          if (this.readMessageRemaining === 0) this.#emit(result);
          break;
        }
        default:
          throw new Error('Unexpected read state');
      }
    }
    return result;
  }

  #emit(result: Buffer[]): void {
    result.push(this.#message as Buffer);
    this.#message = undefined;
    this.readState = NO_DATA;
  }
}

/** grpc-js's stream-decoder module, as this decoder replaces its export. */
interface DecoderModule {
  StreamDecoder: unknown;
}

let installed = false;

/**
 * Makes grpc-js (the copy whose stream-decoder module `resolveDecoder` names) read messages with
 * {@link PooledStreamDecoder}. Once per process; returns whether it is in place (a grpc-js whose
 * decoder lives elsewhere is left as it is: calls work, only without the reuse).
 * @internal
 */
export function usePooledDecoder(resolveDecoder: () => string): boolean {
  if (installed) return true;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- grpc-js's own module, by path
    const mod = require(resolveDecoder()) as DecoderModule;
    if (typeof mod.StreamDecoder !== 'function' || typeof (mod.StreamDecoder as { prototype?: { write?: unknown } }).prototype?.write !== 'function') return false;
    mod.StreamDecoder = PooledStreamDecoder;
    installed = true;
    return true;
  } catch {
    return false;
  }
}

/** Each decoded `ModelInfer` request's message bytes, until it is answered. */
const messageOf = new WeakMap<object, Uint8Array>();
/** Each `ModelInfer` answer's request message bytes, from the handler's return until the answer is serialized. */
const answerMessage = new WeakMap<object, Uint8Array>();

/** `ModelInfer`'s deserializer: `decode`, remembering the bytes the request was read from. @internal */
export function decodeRemembering<T extends object>(decode: (bytes: Buffer) => T): (bytes: Buffer) => T {
  return (bytes) => {
    const request = decode(bytes);
    messageOf.set(request, bytes);
    return request;
  };
}

/** The handler answered `request` with `response` (a call that fails or is cancelled never gets here). @internal */
export function answered(request: object, response: object): void {
  const bytes = messageOf.get(request);
  if (bytes === undefined) return;
  messageOf.delete(request);
  answerMessage.set(response, bytes);
}

/**
 * `ModelInfer`'s serializer: `encode`, then the request's message buffer goes back to the pool. The
 * answer is bytes of its own by then, the request was batched, run and settled before the handler
 * answered, and nothing else keeps a view of its message.
 * @internal
 */
export function encodeReleasing<T extends object>(encode: (response: T) => Buffer): (response: T) => Buffer {
  return (response) => {
    const out = encode(response);
    const bytes = answerMessage.get(response);
    if (bytes !== undefined) {
      answerMessage.delete(response);
      releaseMessageBuffer(bytes);
    }
    return out;
  };
}
