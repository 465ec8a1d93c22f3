import type * as Redis from 'redis';
import { requireOptionalPeer } from '../../core/optional-peer';
import type { RedisScript } from './scripts';

type RedisModule = typeof Redis;
type Client = ReturnType<RedisModule['createClient']>;
/** A command's arguments: strings, or Buffers for binary payloads. */
export type Args = ReadonlyArray<string | Buffer>;

/** The URL with its credentials masked, for messages and logs: secrets never leave in an error. @internal */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    if (u.username !== '' && u.password === '') u.username = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return '(an unparsable Redis URL)';
  }
}

/** Checks a Redis URL's form; the client parses it again when it connects. @internal */
export function checkUrl(where: string, url: unknown): string {
  if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) {
    throw new TypeError(`${where}: expected \`url\` to be a redis:// or rediss:// URL (credentials and TLS go in the URL), got ${typeof url === 'string' ? JSON.stringify(redactUrl(url)) : typeof url}`);
  }
  try {
    new URL(url);
  } catch {
    throw new TypeError(`${where}: \`url\` is not a valid URL: ${redactUrl(url)}`);
  }
  return url;
}

/** What a connection tells its owner. */
export interface ConnectionEvents {
  /** Connected (again): re-create what a restarted Redis lost. */
  onUp?(): void;
  /** The connection was lost; `error` says why when known. It reconnects by itself. */
  onDown?(error: Error | undefined): void;
}

/**
 * One connection to Redis through node-redis (the `redis` package, an optional peer dependency),
 * with what microbatch needs on top: commands while disconnected fail at once instead of queueing
 * (a caller must hear "unavailable" now, not at its timeout), reconnection with capped backoff,
 * scripts by SHA that are loaded again after a Redis restart (NOSCRIPT), and errors whose messages
 * never carry the URL's credentials.
 * @internal
 */
export class RedisConnection {
  readonly #redis: RedisModule;
  readonly #client: Client;
  readonly #shas = new Map<string, string>();
  readonly #where: string;
  #up = false;
  #lastError: Error | undefined;
  #closed = false;

  constructor(where: string, url: string, events: ConnectionEvents = {}, client?: Client) {
    this.#where = where;
    const redis = requireOptionalPeer<RedisModule>('redis', 'microbatch/redis');
    this.#redis = redis;
    this.#client =
      client ??
      redis.createClient({
        url,
        disableOfflineQueue: true,
        socket: { reconnectStrategy: (retries: number) => Math.min(2_000, 25 * 2 ** Math.min(retries, 7)) },
      });
    this.#client.on('error', (e: Error) => {
      this.#lastError = e;
      this.#down();
    });
    this.#client.on('end', () => this.#down());
    this.#client.on('reconnecting', () => this.#down());
    this.#client.on('ready', () => {
      if (this.#up) return;
      this.#up = true;
      this.#lastError = undefined;
      events.onUp?.();
    });
    this.#onDown = (e) => events.onDown?.(e);
  }

  readonly #onDown: (error: Error | undefined) => void;

  #down(): void {
    if (!this.#up) return;
    this.#up = false;
    this.#shas.clear(); // a restarted Redis has lost them; EVALSHA would say so anyway
    this.#onDown(this.#lastError);
  }

  /** True while connected and ready for commands. */
  get up(): boolean {
    return this.#up;
  }

  /** Why the connection was last lost or refused, if known. */
  get lastError(): Error | undefined {
    return this.#lastError;
  }

  /**
   * Connects (resolves once ready). node-redis keeps retrying a refused connection; past
   * `timeoutMs` this gives up and rejects with a message naming the (redacted) URL and the last error.
   */
  async open(url: string, timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let refused: ((e: Error) => void) | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms${this.#lastError === undefined ? '' : ` (last error: ${this.#lastError.message})`}`)), timeoutMs);
      // Retrying cannot fix wrong credentials: say so now rather than at the timeout.
      refused = (e) => {
        if (/^(WRONGPASS|NOAUTH|NOPERM)/.test(e.message)) reject(e);
      };
      this.#client.on('error', refused);
    });
    try {
      await Promise.race([this.#client.connect(), timedOut]);
    } catch (e) {
      this.destroy();
      throw new Error(`${this.#where}: could not connect to ${redactUrl(url)}: ${(e as Error).message}`, { cause: e });
    } finally {
      clearTimeout(timer);
      if (refused !== undefined) this.#client.off('error', refused);
    }
  }

  /** A second connection with the same settings (blocking reads need their own). */
  duplicate(events: ConnectionEvents = {}): RedisConnection {
    return new RedisConnection(this.#where, '', events, this.#client.duplicate());
  }

  /** Runs a command; with `binary`, bulk strings come back as Buffers. */
  command<T>(args: Args, binary = false): Promise<T> {
    const options = binary ? { typeMapping: { [this.#redis.RESP_TYPES.BLOB_STRING]: Buffer } } : undefined;
    return this.#client.sendCommand(args as Array<string | Buffer>, options as never) as Promise<T>;
  }

  /** Runs a script by its SHA, loading it first (again after a Redis restart). */
  async script<T>(script: RedisScript, keys: readonly string[], args: Args, binary = false): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let sha = this.#shas.get(script.name);
      if (sha === undefined) {
        sha = await this.command<string>(['SCRIPT', 'LOAD', script.source]);
        this.#shas.set(script.name, sha);
      }
      try {
        return await this.command<T>(['EVALSHA', sha, String(keys.length), ...keys, ...args], binary);
      } catch (e) {
        if (attempt === 0 && String((e as Error).message).startsWith('NOSCRIPT')) {
          this.#shas.delete(script.name);
          continue;
        }
        throw e;
      }
    }
  }

  /** Closes for good, politely (QUIT after the replies due); see {@link RedisConnection.destroy}. */
  async close(): Promise<void> {
    if (this.#closed && !this.#client.isOpen) return;
    this.#closed = true;
    this.#up = false;
    try {
      if (this.#client.isOpen) await this.#client.close();
    } catch {
      this.destroy();
    }
  }

  /** Cuts the connection at once: a blocking read in progress is cut short. */
  destroy(): void {
    this.#closed = true;
    this.#up = false;
    try {
      if (this.#client.isOpen) this.#client.destroy();
    } catch {
      // already closed
    }
  }
}
