import type { RedisConnection } from './connection';

/** One stream entry as read in binary mode: its id and its field/value list. @internal */
export type RawEntry = [id: Buffer | string, fields: Buffer[] | null];

/**
 * Creates the request stream and the replicas' group if missing, from the stream's start: whichever
 * side comes first creates them, and requests sent before any replica existed are still served.
 * @internal
 */
export async function ensureGroup(connection: RedisConnection, stream: string, group: string): Promise<void> {
  try {
    await connection.command(['XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM']);
  } catch (e) {
    if (!String((e as Error).message).startsWith('BUSYGROUP')) throw e;
  }
}

/** The Redis server's clock, in ms: what deadlines are judged by, on every machine alike. @internal */
export async function serverTime(connection: RedisConnection): Promise<number> {
  const [seconds, micros] = await connection.command<[string, string]>(['TIME']);
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** The server time (ms) at which an entry was added: the first part of its id. @internal */
export function entryTime(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

/** The lag of `group` in an `XINFO GROUPS` reply (0 when unknown). @internal */
export function lagOf(groups: unknown[], group: string): number {
  for (const g of groups) {
    const fields = metaFields(g as unknown[]);
    if (fields.name === group) return Number(fields.lag ?? 0) || 0;
  }
  return 0;
}

/** A flat [key, value, ...] reply (or a RESP3 map) as an object of strings. @internal */
export function metaFields(reply: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (Array.isArray(reply)) for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1] === null ? undefined : String(reply[i + 1]);
  else if (reply !== null && typeof reply === 'object') for (const [k, v] of Object.entries(reply)) out[k] = v === null ? undefined : String(v);
  return out;
}
