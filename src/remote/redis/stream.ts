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
