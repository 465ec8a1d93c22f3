/**
 * A protobuf writer into one growing Buffer, for the messages the server encodes by hand (see
 * `infer-response.ts`). Nested messages are written in place after room for their length, then
 * moved back by what the length did not need (`begin` / `finish`): no buffer per message.
 */

const TWO_32 = 2 ** 32;

/** @internal */
export class ProtoWriter {
  buf: Buffer;
  pos = 0;

  /** @param size - the expected size: the buffer grows past it when needed. */
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(64, size));
  }

  #room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  /** An unsigned varint below 2^32. */
  uint32(v: number): void {
    this.#room(5);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** A 64-bit integer (a number, or a decimal string for one past 2^53), two's complement when negative. */
  int64(v: number | string | bigint): void {
    if (typeof v === 'number' && v >= 0 && v < TWO_32 && Number.isInteger(v)) return this.uint32(v);
    const n = BigInt.asUintN(64, BigInt(v));
    let lo = Number(n & 0xffffffffn);
    let hi = Number(n >> 32n);
    this.#room(10);
    while (hi > 0 || lo > 0x7f) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | ((hi & 0x7f) << 25)) >>> 0;
      hi >>>= 7;
    }
    this.buf[this.pos++] = lo;
  }

  tag(field: number, wire: number): void {
    this.uint32((field << 3) | wire);
  }

  /** A string field; proto3 leaves an empty one out, unless `always` (a `oneof` member). */
  string(field: number, s: string, always = false): void {
    if (s === '' && !always) return;
    const n = Buffer.byteLength(s);
    this.tag(field, 2);
    this.uint32(n);
    this.#room(n);
    this.pos += this.buf.write(s, this.pos);
  }

  /** A bytes field, written even when empty (a repeated entry must keep its place). */
  bytes(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.uint32(b.length);
    this.#room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  double(v: number): void {
    this.#room(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }

  float(v: number): void {
    this.#room(4);
    this.pos = this.buf.writeFloatLE(v, this.pos);
  }

  /** Starts a length-delimited field (a nested message, a packed array); returns what `finish` takes. */
  begin(field: number): number {
    this.tag(field, 2);
    this.#room(5);
    this.pos += 5; // room for the longest length
    return this.pos;
  }

  /** Ends the field `begin` started: writes its length and moves its bytes up to it. */
  finish(start: number): void {
    const length = this.pos - start;
    let at = start - 5;
    let v = length;
    while (v > 0x7f) {
      this.buf[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[at++] = v;
    if (at < start) {
      this.buf.copyWithin(at, start, this.pos);
      this.pos -= start - at;
    }
  }

  /** The bytes written: a view of the writer's buffer. */
  result(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
