import { checkMs, fail } from '../../core/options';
import type { SocketTensorReviver } from '../../executors/socket/codec';
import { reviveTensorDefault } from '../../executors/worker/transfer';
import { checkUrl, RedisConnection, type ConnectionEvents } from './connection';
import { CLIENT_ID, redisKeys, type RedisKeys } from './keys';

/** The options both sides share, checked once. @internal */
export interface CommonOptions {
  readonly url: string;
  readonly keys: RedisKeys;
  readonly group: string;
  readonly claimIdleMs: number;
  readonly maxEntryBytes: number;
  readonly revive: SocketTensorReviver;
}

/** Checks the options a replica and a front end share. @internal */
export function commonOptions(
  where: string,
  o: { url?: unknown; model?: unknown; group?: unknown; claimIdleMs?: unknown; maxEntryBytes?: unknown; tensor?: unknown },
): CommonOptions {
  const url = checkUrl(where, o.url);
  const keys = redisKeys(where, o.model);
  const group = o.group ?? 'replicas';
  if (typeof group !== 'string' || !CLIENT_ID.test(group)) fail(where, 'group', '1 to 64 letters, digits, _ or -', o.group);
  const claimIdleMs = o.claimIdleMs === undefined ? 30_000 : checkMs(where, 'claimIdleMs', o.claimIdleMs, 'positive');
  if (!Number.isFinite(claimIdleMs)) fail(where, 'claimIdleMs', 'a finite number of milliseconds', o.claimIdleMs, RangeError);
  const maxEntryBytes = o.maxEntryBytes ?? 256 * 2 ** 20;
  if (typeof maxEntryBytes !== 'number' || !Number.isInteger(maxEntryBytes) || maxEntryBytes < 1) {
    fail(where, 'maxEntryBytes', 'an integer number of bytes from 1 and up', o.maxEntryBytes, RangeError);
  }
  const factory = o.tensor;
  if (factory !== undefined && typeof factory !== 'function') fail(where, 'tensor', 'a function (type, data, dims) => tensor', factory);
  const revive: SocketTensorReviver =
    factory === undefined ? reviveTensorDefault : (_c, type, data, dims) => (factory as (t: string, d: unknown, s: readonly number[]) => unknown)(type, data, dims);
  return { url, keys, group, claimIdleMs, maxEntryBytes, revive };
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

  constructor(where: string, url: string, events: ConnectionEvents) {
    this.#url = url;
    this.commands = new RedisConnection(where, url, events);
    this.reader = this.commands.duplicate();
  }

  async open(prepare: () => Promise<void>): Promise<void> {
    await this.commands.open(this.#url);
    try {
      await this.reader.open(this.#url);
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
