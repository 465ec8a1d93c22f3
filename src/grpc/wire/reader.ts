/**
 * A protobuf reader over one Buffer, for the messages the server decodes by hand (see
 * `infer-request.ts`). It reads what proto3 puts on the wire: varints (as two 32-bit halves, so a
 * 64-bit integer keeps every bit), fixed 32/64-bit numbers, and length-delimited fields as views
 * (no copy). Any byte that does not fit throws a {@link MalformedMessage}.
 */

/** A message that is not valid protobuf: truncated, a varint over 10 bytes, a group, an unknown wire type. @internal */
export class MalformedMessage extends Error {
  constructor(what: string, detail: string) {
    super(`${what} is not a valid protobuf message: ${detail}`);
    this.name = 'MalformedMessage';
  }
}

const TWO_32 = 4294967296;

/** The decimal string of a 64-bit integer given as two unsigned 32-bit halves (proto-loader's `longs: String`). @internal */
export function int64String(lo: number, hi: number, signed: boolean): string {
  if (hi === 0) return String(lo);
  if (signed && hi >= 0x80000000) return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
  // Below 2^53 a double holds it exactly.
  if (hi < 0x200000) return String(hi * TWO_32 + lo);
  return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
}

/** @internal */
export class ProtoReader {
  readonly buf: Buffer;
  pos: number;
  /** The low and high halves (unsigned) of the last varint read by {@link varint}. */
  lo = 0;
  hi = 0;
  readonly #what: string;

  constructor(buf: Buffer, what: string) {
    this.buf = buf;
    this.pos = 0;
    this.#what = what;
  }

  fail(detail: string): never {
    throw new MalformedMessage(this.#what, detail);
  }

  #byte(end: number): number {
    if (this.pos >= end) this.fail(`it ends inside a field at byte ${this.pos}`);
    return this.buf[this.pos++] as number;
  }

  /** Reads a varint into `lo`/`hi`, not past `end`. */
  varint(end: number): void {
    let lo = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      const b = this.#byte(end);
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.lo = lo >>> 0;
        this.hi = 0;
        return;
      }
    }
    let b = this.#byte(end);
    lo |= (b & 0x7f) << 28;
    let hi = (b & 0x7f) >> 4;
    for (let shift = 3; b >= 0x80; shift += 7) {
      if (shift > 31) this.fail(`a varint at byte ${this.pos} runs past 10 bytes`);
      b = this.#byte(end);
      hi |= (b & 0x7f) << shift;
    }
    this.lo = lo >>> 0;
    this.hi = hi >>> 0;
  }

  /** A varint that must fit 32 bits unsigned (tags, lengths). */
  uint32(end: number): number {
    this.varint(end);
    return this.lo;
  }

  /** The end of a length-delimited field starting here (its length read), checked against `end`. */
  delimited(end: number): number {
    this.varint(end);
    const stop = this.pos + this.lo;
    if (this.hi !== 0 || stop > end) this.fail(`a field at byte ${this.pos} declares ${int64String(this.lo, this.hi, false)} bytes, but ${end - this.pos} are left`);
    return stop;
  }

  string(end: number): string {
    const stop = this.delimited(end);
    const s = this.buf.toString('utf8', this.pos, stop);
    this.pos = stop;
    return s;
  }

  /** A bytes field as a view into the message (no copy). */
  bytes(end: number): Buffer {
    const stop = this.delimited(end);
    const b = this.buf.subarray(this.pos, stop);
    this.pos = stop;
    return b;
  }

  float(end: number): number {
    if (this.pos + 4 > end) this.fail(`it ends inside a 32-bit field at byte ${this.pos}`);
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }

  double(end: number): number {
    if (this.pos + 8 > end) this.fail(`it ends inside a 64-bit field at byte ${this.pos}`);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Skips a field of wire type `wire` (an unknown field, or one read elsewhere). */
  skip(wire: number, end: number): void {
    if (wire === 0) this.varint(end);
    else if (wire === 1) this.#advance(8, end);
    else if (wire === 2) this.pos = this.delimited(end);
    else if (wire === 5) this.#advance(4, end);
    else this.fail(`wire type ${wire} at byte ${this.pos} (groups and unknown wire types are not proto3)`);
  }

  #advance(n: number, end: number): void {
    if (this.pos + n > end) this.fail(`it ends inside a field at byte ${this.pos}`);
    this.pos += n;
  }
}
