import type { Clock } from '../core/clock';
import { describe } from '../core/describe';
import type { CacheOptions, RequestOptions } from '../core/options';
import { PendingCall } from './admission';
import { sharedAborted, sharedTimedOut } from './settle-errors';

/** Counters of a host's response cache (see `HostStats.cache`). */
export interface CacheStats {
  /** Requests answered from a finished result. */
  readonly hits: number;
  /** Requests that joined an identical request waiting or running (one computation for both). */
  readonly shared: number;
  /** Requests that had to be computed. */
  readonly misses: number;
  /** Finished results kept now. */
  readonly size: number;
}

interface Finished {
  readonly value: unknown;
  readonly expiresAt: number;
  /** The content a default key was computed from, compared on a hit (hash collisions). */
  readonly bytes: Uint8Array | undefined;
}

interface Pending {
  readonly promise: Promise<unknown>;
  readonly cancel: AbortController;
  readonly bytes: Uint8Array | undefined;
  waiters: number;
}

/** The host path the cache composes around. @internal */
export interface CacheFront<In, Out> {
  /** The host's refusal of this call (stopped, bad options), if any: the cache must not answer what the host refuses. */
  refusal(options: RequestOptions | undefined): Promise<never> | undefined;
  /** Submits one computation to the host, with the priority given and the signal that cancels it. */
  submit(item: In, options: RequestOptions): Promise<Out>;
}

/** A key and, for content keys, views of the bytes it was hashed from. */
interface Keyed {
  readonly key: unknown;
  readonly parts: readonly Uint8Array[] | undefined;
}

/**
 * The host's response cache: identical requests waiting or running share one computation, and
 * finished results are kept (least recently used first out, up to `maxEntries`, each for `ttlMs`).
 * Errors are never kept. Keys come from the user's `key(item)`, or by default: primitives as
 * themselves; typed arrays, `ArrayBuffer`s, tensors (`{ type, data, dims }`) and arrays or records
 * of them by content (a hash, with the bytes compared on a hit so that a collision is a miss).
 *
 * A computation runs as a request of its own, without any one caller's signal or time limit: each
 * caller waits for it under its own, and when every caller has left it is aborted (it leaves the
 * queue if it has not started). After a reload every new request is the new model's: nothing
 * the old model computed is given or joined.
 * @internal
 */
export class ResponseCache<In, Out> {
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  readonly #key: ((item: In) => unknown) | undefined;
  readonly #clock: Clock;
  readonly #name: string;
  readonly #done = new Map<unknown, Finished>();
  readonly #pending = new Map<unknown, Pending>();
  /** Counts the models served: a computation of an earlier one is neither shared nor kept. */
  #model = 0;
  #hits = 0;
  #shared = 0;
  #misses = 0;

  constructor(options: Required<Pick<CacheOptions<In>, 'maxEntries' | 'ttlMs'>> & Pick<CacheOptions<In>, 'key'>, clock: Clock, name: string) {
    this.#maxEntries = options.maxEntries;
    this.#ttlMs = options.ttlMs;
    this.#key = options.key;
    this.#clock = clock;
    this.#name = name;
  }

  get stats(): CacheStats {
    return { hits: this.#hits, shared: this.#shared, misses: this.#misses, size: this.#done.size };
  }

  /**
   * Answers `item` from the cache, by joining an identical computation, or by submitting it
   * through `host` (unless the host refuses the call).
   */
  run(item: In, options: RequestOptions | undefined, host: CacheFront<In, Out>): Promise<Out> {
    const refused = host.refusal(options);
    if (refused !== undefined) return refused;
    let keyed: Keyed;
    try {
      keyed = this.#keyOf(item);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const now = this.#clock.now();
    const done = this.#done.get(keyed.key);
    if (done !== undefined && sameBytes(done.bytes, keyed.parts)) {
      if (done.expiresAt > now) {
        // Least recently used goes first: a hit moves the entry to the back of the map's order.
        this.#done.delete(keyed.key);
        this.#done.set(keyed.key, done);
        this.#hits++;
        return Promise.resolve(done.value as Out);
      }
      this.#done.delete(keyed.key);
    }
    let pending = this.#pending.get(keyed.key);
    if (pending !== undefined && sameBytes(pending.bytes, keyed.parts)) {
      this.#shared++;
    } else {
      this.#misses++;
      const cancel = new AbortController();
      const promise = host.submit(item, { signal: cancel.signal, ...(options?.priority === undefined ? {} : { priority: options.priority }) });
      const bytes = copyOf(keyed.parts); // the caller may reuse its buffers: keep a copy
      const entry: Pending = { promise, cancel, bytes, waiters: 0 };
      pending = entry;
      // Only the first of a colliding pair is shared; the second computes without sharing.
      const shareable = !this.#pending.has(keyed.key);
      if (shareable) this.#pending.set(keyed.key, entry);
      const model = this.#model;
      promise.then(
        (value) => {
          if (shareable && this.#pending.get(keyed.key) === entry) this.#pending.delete(keyed.key);
          if (model === this.#model) this.#keep(keyed.key, bytes, value);
        },
        () => {
          if (shareable && this.#pending.get(keyed.key) === entry) this.#pending.delete(keyed.key);
        },
      );
    }
    return this.#wait(pending, options) as Promise<Out>;
  }

  /**
   * A new model serves (a reload swapped it in): the old model's answers are dropped, and its
   * computations still waiting or running go on for the callers that wait for them but are
   * neither joined by a new request nor kept.
   */
  newModel(): void {
    this.#model++;
    this.#done.clear();
    this.#pending.clear();
  }

  /** Waits for a shared computation under the caller's own signal and time limit. */
  #wait(p: Pending, options: RequestOptions | undefined): Promise<unknown> {
    const signal = options?.signal;
    const timeoutMs = options?.timeoutMs;
    p.waiters++;
    if (signal === undefined && timeoutMs === undefined) {
      return p.promise.finally(() => p.waiters--);
    }
    return PendingCall.open<unknown>(this.#clock, (call) => {
      const leave = (error: Error): void => {
        // The last caller gone: nobody wants the answer any more.
        if (call.settle(error) && --p.waiters === 0) p.cancel.abort(error);
      };
      const onAbort = (): void => leave(sharedAborted(this.#name, signal?.reason));
      if (signal?.aborted === true) return onAbort();
      call.arm(this.#clock, timeoutMs ?? Infinity, () => leave(sharedTimedOut(this.#name, timeoutMs as number)), signal, onAbort);
      p.promise.then(
        (value) => {
          if (call.settle(undefined, value)) p.waiters--;
        },
        (error: unknown) => {
          if (call.settle(error as Error)) p.waiters--;
        },
      );
    });
  }

  #keep(key: unknown, bytes: Uint8Array | undefined, value: unknown): void {
    if (this.#maxEntries === 0 || this.#ttlMs === 0) return;
    this.#done.delete(key);
    this.#done.set(key, { value, expiresAt: this.#clock.now() + this.#ttlMs, bytes });
    while (this.#done.size > this.#maxEntries) this.#done.delete(this.#done.keys().next().value);
  }

  #keyOf(item: In): Keyed {
    if (this.#key !== undefined) return { key: this.#key(item), parts: undefined };
    return defaultKey(this.#name, item);
  }
}

/**
 * The default key: primitives as themselves; content (typed arrays, ArrayBuffers, tensors, and
 * arrays or records of them) as a hash string plus the byte views it was hashed from (copied only
 * when an entry keeps them, and compared on a hit).
 */
function defaultKey(name: string, item: unknown): Keyed {
  const t = typeof item;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'bigint' || item === undefined || item === null) return { key: item, parts: undefined };
  const parts: Uint8Array[] = [];
  const shape = describeContent(name, item, parts);
  let length = 0;
  let h = FNV_OFFSET;
  for (const p of parts) {
    length += p.byteLength;
    h = fnv1a(p, h);
  }
  return { key: `${shape}#${length}#${h >>> 0}`, parts };
}

/** Walks the content, collecting its bytes; returns a string of its structure (types, dims, names). */
function describeContent(name: string, value: unknown, parts: Uint8Array[]): string {
  if (ArrayBuffer.isView(value)) {
    parts.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    return Object.prototype.toString.call(value).slice(8, -1);
  }
  if (value instanceof ArrayBuffer) {
    parts.push(new Uint8Array(value));
    return 'ArrayBuffer';
  }
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    parts.push(ENCODER.encode(JSON.stringify(value)));
    return typeof value;
  }
  if (Array.isArray(value)) return `[${value.map((v) => describeContent(name, v, parts)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const o = value as { type?: unknown; data?: unknown; dims?: unknown };
    if (typeof o.type === 'string' && Array.isArray(o.dims) && o.data !== undefined) {
      return `tensor(${o.type};${(o.dims as unknown[]).join('x')};${describeContent(name, o.data, parts)})`;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto === Object.prototype || proto === null) {
      const keys = Object.keys(value).sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${describeContent(name, (value as Record<string, unknown>)[k], parts)}`).join(',')}}`;
    }
  }
  throw new TypeError(
    `${name}: the response cache has no default key for ${describe(value)}; give the cache a key(item) function ` +
      '(the default keys strings, numbers, booleans, typed arrays, ArrayBuffers, tensors, and arrays or plain objects of them)',
  );
}

const FNV_OFFSET = 0x811c9dc5;
const ENCODER = new TextEncoder();

/**
 * 32-bit FNV-1a over 4-byte words where the view is aligned (4× fewer steps than per byte: a
 * 110 KB image hashes in ~30 µs), bytes for the rest. Collisions are caught by the byte compare.
 */
function fnv1a(bytes: Uint8Array, seed: number): number {
  let h = seed;
  let i = 0;
  if (bytes.byteOffset % 4 === 0) {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
    for (; i < words.length; i++) {
      h ^= words[i] as number;
      h = Math.imul(h, 0x01000193);
    }
    i *= 4;
  }
  for (; i < bytes.length; i++) {
    h ^= bytes[i] as number;
    h = Math.imul(h, 0x01000193);
  }
  return h;
}

/** One contiguous copy of the parts (what an entry keeps). */
function copyOf(parts: readonly Uint8Array[] | undefined): Uint8Array | undefined {
  if (parts === undefined) return undefined;
  let length = 0;
  for (const p of parts) length += p.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Whether a kept copy holds the same bytes as the parts of a new request. */
function sameBytes(kept: Uint8Array | undefined, parts: readonly Uint8Array[] | undefined): boolean {
  if (kept === undefined || parts === undefined) return kept === undefined && parts === undefined;
  let at = 0;
  for (const p of parts) {
    if (at + p.byteLength > kept.byteLength) return false;
    // Buffer.compare runs natively; a JS loop over 110 KB costs ~0.1 ms.
    if (Buffer.compare(Buffer.from(kept.buffer, kept.byteOffset + at, p.byteLength), Buffer.from(p.buffer, p.byteOffset, p.byteLength)) !== 0) return false;
    at += p.byteLength;
  }
  return at === kept.byteLength;
}
