/**
 * Length-prefixed frames on a byte stream. One frame:
 *
 * ```
 * u32 LE  frameLength   bytes after this field
 * u32 LE  headerLength  bytes of the JSON header
 * ...     header        UTF-8 JSON (the message, with typed arrays replaced by segment references)
 * ...     segments      the raw bytes of every typed array, back to back, in header order
 * ```
 *
 * Raw segments keep tensors compact (no base64, no number-to-text), and the header stays readable
 * when debugging with `socat`.
 * @internal
 */

/** Bytes of the two length fields. */
const PREFIX = 8;

/** Too large a frame is refused before it is buffered: a garbage length must not exhaust memory. */
export class FrameTooLargeError extends Error {
  constructor(length: number, max: number) {
    super(`a frame of ${length} bytes exceeds maxFrameBytes (${max})`);
    this.name = 'FrameTooLargeError';
  }
}

/** One frame: its header text and the bytes after it. @internal */
export interface Frame {
  readonly header: string;
  /** The segment bytes (a view into the received data: copy what must outlive the frame). */
  readonly body: Buffer;
}

/** Builds the buffers of one frame, without copying the segments. @internal */
export function encodeFrame(header: string, segments: readonly Buffer[]): Buffer[] {
  const head = Buffer.from(header, 'utf8');
  let body = 0;
  for (const s of segments) body += s.byteLength;
  const prefix = Buffer.allocUnsafe(PREFIX);
  prefix.writeUInt32LE(4 + head.byteLength + body, 0);
  prefix.writeUInt32LE(head.byteLength, 4);
  return [prefix, head, ...segments];
}

/**
 * Reassembles frames from stream chunks. Chunks are kept in a list and joined once per frame, so a
 * large frame arriving in many chunks is copied once, not once per chunk.
 * @internal
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  #chunks: Buffer[] = [];
  #bytes = 0;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Adds a chunk; returns the frames it completed. Throws on a malformed or oversized frame. */
  push(chunk: Buffer): Frame[] {
    this.#chunks.push(chunk);
    this.#bytes += chunk.byteLength;
    const frames: Frame[] = [];
    for (;;) {
      if (this.#bytes < 4) break;
      const first = this.#join(Math.min(this.#bytes, PREFIX));
      const length = first.readUInt32LE(0);
      if (length > this.#maxFrameBytes) throw new FrameTooLargeError(length, this.#maxFrameBytes);
      if (length < 4) throw new Error(`a frame of ${length} bytes is too short to hold its header length`);
      if (this.#bytes < 4 + length) break;
      const all = this.#join(this.#bytes);
      const headerLength = all.readUInt32LE(4);
      if (headerLength > length - 4) throw new Error(`a frame's header length (${headerLength}) exceeds the frame (${length - 4} bytes)`);
      frames.push({
        header: all.toString('utf8', PREFIX, PREFIX + headerLength),
        body: all.subarray(PREFIX + headerLength, 4 + length),
      });
      const rest = all.subarray(4 + length);
      this.#chunks = rest.byteLength > 0 ? [rest] : [];
      this.#bytes = rest.byteLength;
    }
    return frames;
  }

  /** Joins the first chunks until `atLeast` bytes are in the first one; returns it. */
  #join(atLeast: number): Buffer {
    const first = this.#chunks[0] as Buffer;
    if (first.byteLength >= atLeast) return first;
    const joined = Buffer.concat(this.#chunks, this.#bytes);
    this.#chunks = [joined];
    return joined;
  }
}
