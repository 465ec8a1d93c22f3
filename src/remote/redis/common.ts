import { checkMs, fail } from '../../core/options';
import type { SocketTensorReviver } from '../wire/codec';
import { reviveTensorDefault } from '../../executors/worker/transfer';
import { checkUrl, RedisConnection, type ConnectionEvents } from './connection';
import { CLIENT_ID, redisKeys, type RedisKeys } from './keys';

/**
 * The defaults of the Redis transport's options, in one table (the TSDoc `@default`s state them).
 * @internal
 */
export const REDIS_DEFAULTS = {
  group: 'replicas',
  claimIdleMs: 30_000,
  heartbeatTtlMs: 2_000,
  connectTimeoutMs: 10_000,
  maxEntryBytes: 256 * 2 ** 20,
} as const;

/**
 * The options a replica ({@link serveHostOnRedis}) and a front end ({@link connectRedisHost}) share.
 *
 * @example
 * ```ts
 * const shared: RedisOptions = { url: 'rediss://app:secret@redis.internal:6380', model: 'classifier' };
 * ```
 */
export interface RedisOptions {
  /** Where Redis is: `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS. Credentials never appear in errors. */
  url: string;
  /** The model's name: its keys are `mb:{model}:*` (one hash tag, so it works on Redis Cluster). Replicas and front ends use the same name. */
  model: string;
  /**
   * The consumer group the replicas of this model share (created from the stream's start by
   * whichever side comes first).
   * @default 'replicas'
   */
  group?: string;
  /**
   * The last resort: how long an entry may sit unrenewed with a replica before another replica
   * takes it over whatever that replica's heartbeat says. A dead replica's entries are taken over
   * far sooner, when its heartbeat expires (`heartbeatTtlMs`); a running batch renews its entries
   * every third of this. A front end is `ready` while a replica has been seen within it.
   * @default 30000
   */
  claimIdleMs?: number;
  /**
   * How long connecting may take (Redis may start later than this process) before the call rejects.
   * @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * The largest entry payload accepted; a larger request is answered with an error and never run.
   * @default 268435456 (256 MiB)
   */
  maxEntryBytes?: number;
  /**
   * Builds tensors from tensors that arrive as class instances (onnxruntime `Tensor`s).
   * @default an onnxruntime-node `Tensor` when onnxruntime-node loads here, else a plain `{ type, data, dims }`
   */
  tensor?: (type: string, data: unknown, dims: readonly number[]) => unknown;
}

/** The options both sides share, checked once. @internal */
export interface CheckedOptions {
  readonly url: string;
  readonly keys: RedisKeys;
  readonly group: string;
  readonly claimIdleMs: number;
  readonly connectTimeoutMs: number;
  readonly maxEntryBytes: number;
  readonly revive: SocketTensorReviver;
}

/** Checks the options a replica and a front end share. @internal */
export function commonOptions(
  where: string,
  o: { readonly [K in keyof RedisOptions]?: unknown },
): CheckedOptions {
  const url = checkUrl(where, o.url);
  const keys = redisKeys(where, o.model);
  const group = o.group ?? REDIS_DEFAULTS.group;
  if (typeof group !== 'string' || !CLIENT_ID.test(group)) fail(where, 'group', '1 to 64 letters, digits, _ or -', o.group);
  const claimIdleMs = o.claimIdleMs === undefined ? REDIS_DEFAULTS.claimIdleMs : checkMs(where, 'claimIdleMs', o.claimIdleMs, 'positive');
  if (!Number.isFinite(claimIdleMs)) fail(where, 'claimIdleMs', 'a finite number of milliseconds', o.claimIdleMs, RangeError);
  const connectTimeoutMs = o.connectTimeoutMs === undefined ? REDIS_DEFAULTS.connectTimeoutMs : checkMs(where, 'connectTimeoutMs', o.connectTimeoutMs, 'positive');
  const maxEntryBytes = o.maxEntryBytes ?? REDIS_DEFAULTS.maxEntryBytes;
  if (typeof maxEntryBytes !== 'number' || !Number.isInteger(maxEntryBytes) || maxEntryBytes < 1) {
    fail(where, 'maxEntryBytes', 'an integer number of bytes from 1 and up', o.maxEntryBytes, RangeError);
  }
  const factory = o.tensor;
  if (factory !== undefined && typeof factory !== 'function') fail(where, 'tensor', 'a function (type, data, dims) => tensor', factory);
  const revive: SocketTensorReviver =
    factory === undefined ? reviveTensorDefault : (_c, type, data, dims) => (factory as (t: string, d: unknown, s: readonly number[]) => unknown)(type, data, dims);
  return { url, keys, group, claimIdleMs, connectTimeoutMs, maxEntryBytes, revive };
}

/**
 * The two connections each side holds: one for commands and scripts, one for its blocking read
 * (a blocked connection cannot send anything else). `open()` connects both and runs `prepare`;
 * if any step fails, both are closed again.
 * @internal
 */
export class ConnectionPair {
  readonly commands: RedisConnection;
  readonly reader: RedisConnection;
  readonly #url: string;
  readonly #timeoutMs: number;

  constructor(where: string, url: string, timeoutMs: number, events: ConnectionEvents) {
    this.#url = url;
    this.#timeoutMs = timeoutMs;
    this.commands = new RedisConnection(where, url, events);
    this.reader = this.commands.duplicate();
  }

  async open(prepare: () => Promise<void>): Promise<void> {
    await this.commands.open(this.#url, this.#timeoutMs);
    try {
      await this.reader.open(this.#url, this.#timeoutMs);
      await prepare();
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  async close(): Promise<void> {
    this.reader.destroy();
    await this.commands.close();
    await this.reader.close();
  }
}
