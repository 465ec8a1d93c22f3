import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { toError } from '../../core/describe';
import { DeliveryLimitError } from '../../core/errors';
import { checkMs, fail, optionKeys, rejectUnknownKeys, type RequestOptions } from '../../core/options';
import { isServableWith, type ServableWith } from '../../core/servable';
import type { SocketTensorReviver } from '../wire/codec';
import { commonOptions, ConnectionPair, REDIS_DEFAULTS } from './common';
import type { RedisReplica, RedisReplicaStats, RedisTakeover, ServeHostOnRedisOptions } from './replica-types';
import { redactUrl, type RedisConnection } from './connection';
import { Answers } from './answers';
import { decodeRequest, type DecodedRequest } from './entry';
import { CLIENT_ID, type RedisKeys } from './keys';
import { HEARTBEAT, LEAVE, RENEW, TAKEOVER } from './scripts';
import { ensureGroup, entryTime, serverTime, type RawEntry } from './stream';

const KEYS = optionKeys<ServeHostOnRedisOptions>({
  url: true, model: true, group: true, claimIdleMs: true, connectTimeoutMs: true, maxEntryBytes: true, tensor: true,
  consumer: true, maxDeliveries: true, blockMs: true, replyTtlMs: true, heartbeatTtlMs: true, onTakeover: true,
});

interface Held {
  readonly id: string;
  readonly deliveries: number;
  readonly decoded: Extract<DecodedRequest, { ok: true }>;
  readonly remainingMs: number | undefined;
}

/**
 * Serves a host to front ends on other machines through a Redis stream consumer group: the
 * replicas of a model share one request stream, and each pulls only as much as its host can start
 * now (`XREADGROUP ... COUNT free`), so batching stays work-conserving across the cluster. While
 * every slot runs, it also takes ahead what it starts next, but only what already waits in the
 * stream (a read that does not block), so its model does not idle between batches and an idle
 * replica, blocked in its read, is still handed new work first. Front ends use {@link connectRedisHost}.
 *
 * A replica refreshes its heartbeat every quarter of `heartbeatTtlMs`. The entries of a replica
 * whose heartbeat is older than that (it died, or froze) are taken over at once, run alone, and
 * answered with {@link DeliveryLimitError} after `maxDeliveries` deliveries without an answer; those
 * whose caller is gone (past their deadline, or withdrawn) are acknowledged and deleted without
 * running, and the dead replica is removed from the group. Each takeover is counted
 * (`stats.takeovers`) and reported to `onTakeover`. Entries idle past `claimIdleMs` are taken over
 * whatever the heartbeat says, as the last resort.
 * Answering is atomic with acknowledging and checks ownership first, so each caller gets one answer.
 * Execution is at-least-once: the batch function must be safe to run twice for the same input.
 *
 * @param host - the host to serve (a `ModelHost`, or a host from `createHost`/`microbatch/onnx`).
 * @param options - where Redis is, which model, and recovery settings.
 *
 * @example
 * ```ts
 * const host = await createServingHost('model.onnx', { maxBatchSize: 32 });
 * const replica = await serveHostOnRedis(host, { url: process.env.REDIS_URL!, model: 'classifier' });
 * process.on('SIGTERM', async () => { await replica.close(); await host.stop(); });
 * ```
 */
export async function serveHostOnRedis(host: ServableWith<'inference' | 'stats' | 'options'>, options: ServeHostOnRedisOptions): Promise<RedisReplica> {
  const where = 'serveHostOnRedis';
  if (!isServableWith(host, ['inference', 'stats', 'options'])) {
    throw new TypeError(`${where}: expected a host with inference(), stats and options, such as a ModelHost; got ${host === null ? 'null' : typeof host}`);
  }
  if (typeof options !== 'object' || options === null) fail(where, 'options', 'an object { url, model, ... }', options);
  rejectUnknownKeys(where, options, KEYS);
  const replica = new Replica(where, host, options);
  await replica.open();
  return replica;
}

class Replica implements RedisReplica {
  readonly consumer: string;
  readonly #host: ServableWith<'inference' | 'stats' | 'options'>;
  readonly #url: string;
  readonly #keys: RedisKeys;
  readonly #group: string;
  readonly #claimIdleMs: number;
  readonly #maxDeliveries: number;
  readonly #blockMs: number;
  readonly #replyTtlMs: number;
  readonly #heartbeatTtlMs: number;
  readonly #onTakeover: ((takeover: RedisTakeover) => void) | undefined;
  readonly #maxEntryBytes: number;
  readonly #revive: SocketTensorReviver;
  readonly #commands: RedisConnection;
  readonly #reader: RedisConnection;
  readonly #connections: ConnectionPair;
  readonly #held = new Map<string, Held>();
  /** Taken-over entries: each runs alone, when the host has nothing else to do. */
  readonly #isolated: Held[] = [];
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #claimTimer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #claiming = false;
  /** Answers on their way to Redis, one script call per turn of the event loop (answers.ts). */
  readonly #answers: Answers;
  #closing: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  readonly #stats = { pulled: 0, reclaimed: 0, answered: 0, expired: 0, poisoned: 0, undecodable: 0, refused: 0, takeovers: 0, cleared: 0 };

  constructor(where: string, host: ServableWith<'inference' | 'stats' | 'options'>, o: ServeHostOnRedisOptions) {
    this.#host = host;
    const common = commonOptions(where, o);
    ({ url: this.#url, keys: this.#keys, group: this.#group, claimIdleMs: this.#claimIdleMs, maxEntryBytes: this.#maxEntryBytes, revive: this.#revive } = common);
    this.consumer = o.consumer ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 32)}-${process.pid}-${randomBytes(4).toString('hex')}`;
    if (typeof this.consumer !== 'string' || !CLIENT_ID.test(this.consumer)) fail(where, 'consumer', '1 to 64 letters, digits, _ or -', o.consumer);
    this.#maxDeliveries = o.maxDeliveries ?? 3;
    if (!Number.isInteger(this.#maxDeliveries) || this.#maxDeliveries < 1) fail(where, 'maxDeliveries', 'an integer from 1 and up', o.maxDeliveries, RangeError);
    this.#blockMs = o.blockMs === undefined ? 1_000 : checkMs(where, 'blockMs', o.blockMs, 'positive');
    this.#replyTtlMs = o.replyTtlMs === undefined ? 60_000 : checkMs(where, 'replyTtlMs', o.replyTtlMs, 'positive');
    this.#heartbeatTtlMs = o.heartbeatTtlMs === undefined ? REDIS_DEFAULTS.heartbeatTtlMs : checkMs(where, 'heartbeatTtlMs', o.heartbeatTtlMs, 'positive');
    if (!Number.isFinite(this.#heartbeatTtlMs)) fail(where, 'heartbeatTtlMs', 'a finite number of milliseconds', o.heartbeatTtlMs, RangeError);
    if (o.onTakeover !== undefined && typeof o.onTakeover !== 'function') fail(where, 'onTakeover', 'a function (takeover) => void', o.onTakeover);
    this.#onTakeover = o.onTakeover;
    this.#connections = new ConnectionPair(where, this.#url, common.connectTimeoutMs, {
      // A restarted Redis is empty: the stream, the group and the heartbeat come back at once.
      onUp: () => void this.#prepare().catch(() => undefined),
    });
    this.#commands = this.#connections.commands;
    this.#reader = this.#connections.reader;
    this.#answers = new Answers({ commands: this.#commands, keys: this.#keys, group: this.#group, consumer: this.consumer, replyTtlMs: this.#replyTtlMs, stats: this.#stats });
  }

  get stats(): RedisReplicaStats {
    return { ...this.#stats, inFlight: this.#held.size + this.#isolated.length };
  }

  async open(): Promise<void> {
    await this.#connections.open(() => this.#prepare());
    const every = Math.max(10, Math.floor(this.#claimIdleMs / 3));
    const beat = Math.max(10, Math.floor(this.#heartbeatTtlMs / 4));
    // Timers never keep the process alive by themselves: the caller's host and close() decide.
    this.#heartbeatTimer = setInterval(() => void this.#heartbeat().catch(() => undefined), beat).unref();
    this.#renewTimer = setInterval(() => void this.#renew().catch(() => undefined), every).unref();
    this.#claimTimer = setInterval(() => void this.#claim().catch(() => undefined), Math.min(every, beat)).unref();
    this.#loop = this.#pullLoop();
  }

  /** The stream, the group, this replica's heartbeat and the model's description. */
  async #prepare(): Promise<void> {
    await ensureGroup(this.#commands, this.#keys.requests, this.#group);
    await this.#heartbeat();
    const model = this.#host.model;
    const fields = ['maxBatchSize', String(this.#host.options.maxBatchSize)];
    if (model !== undefined) fields.push('model', JSON.stringify(model));
    await this.#commands.command(['HSET', this.#keys.meta, ...fields]);
  }

  #heartbeat(): Promise<unknown> {
    return this.#commands.script(HEARTBEAT, [this.#keys.replicas], [this.consumer, String(Math.max(this.#claimIdleMs, this.#heartbeatTtlMs) * 2)]);
  }

  /** How many more entries the host can start now: free batch slots' rows, less what it holds. */
  #capacity(): number {
    if (this.#closing !== undefined || this.#isolated.length > 0) return 0;
    const { queued, runningBatches = 0 } = this.#host.stats;
    const { maxBatchSize, maxConcurrentBatches = 1 } = this.#host.options;
    return Math.max(0, (maxConcurrentBatches - runningBatches) * maxBatchSize - queued);
  }

  /**
   * How many more entries the host starts next, when its running batches end: every slot's rows,
   * less what it holds. Pulled ahead while the batches run, so the model does not wait for the
   * answer flush, the read and the decoding between one batch and the next.
   */
  #nextCapacity(): number {
    if (this.#closing !== undefined || this.#isolated.length > 0) return 0;
    const { maxBatchSize, maxConcurrentBatches = 1 } = this.#host.options;
    return Math.max(0, maxConcurrentBatches * maxBatchSize - this.#host.stats.queued);
  }

  async #pullLoop(): Promise<void> {
    let backoff = 0;
    while (this.#closing === undefined) {
      // Let the host start what it was just given before free capacity is counted: a batch is
      // released on a later tick, and until then its slot still looks free.
      await new Promise((r) => setImmediate(r));
      this.#runIsolated();
      const now = this.#capacity();
      // Every slot busy: take ahead only what already waits in the stream (no BLOCK), so that a
      // replica blocked in its read, idle, is handed new entries first.
      const ahead = now === 0 ? this.#nextCapacity() : 0;
      if (now === 0 && ahead === 0) {
        await this.#nextChange(this.#blockMs);
        continue;
      }
      const count = now > 0 ? now : ahead;
      try {
        const reply = await this.#reader.command<Array<[Buffer, RawEntry[]]> | null>(
          now > 0
            ? ['XREADGROUP', 'GROUP', this.#group, this.consumer, 'COUNT', String(count), 'BLOCK', String(this.#blockMs), 'STREAMS', this.#keys.requests, '>']
            : ['XREADGROUP', 'GROUP', this.#group, this.consumer, 'COUNT', String(count), 'STREAMS', this.#keys.requests, '>'],
          true,
        );
        backoff = 0;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length > 0) await this.#acceptPulled(entries);
        // Read ahead and the stream is drained: nothing more to take until a batch ends.
        if (now === 0 && entries.length < count) await this.#nextChange(this.#blockMs);
      } catch (e) {
        if (this.#closing !== undefined) break;
        if (String((e as Error).message).startsWith('NOGROUP')) await ensureGroup(this.#commands, this.#keys.requests, this.#group).catch(() => undefined);
        backoff = Math.min(1_000, Math.max(25, backoff * 2));
        await this.#nextChange(backoff);
      }
    }
  }

  /**
   * Decodes entries of a first delivery and hands them on. The server's clock is read only when
   * an entry carries a deadline: without one, a pull costs one round trip, not two.
   */
  async #acceptPulled(entries: RawEntry[]): Promise<void> {
    this.#stats.pulled += entries.length;
    const decoded = entries.map((e) => decodeRequest(e[1] ?? [], this.#maxEntryBytes, this.#revive));
    const now = decoded.some((d) => d.ok && d.timeoutMs !== undefined) ? await serverTime(this.#commands) : Number.NaN;
    for (let i = 0; i < entries.length; i++) this.#accept(entries[i]![0].toString(), decoded[i]!, 1, now);
  }

  /** Resolves when an entry settles, on close, or after `ms`. */
  #nextChange(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const previous = this.#wake;
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        previous?.();
        done();
      };
    });
  }

  #poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Decides what to do with one entry read from the stream (first delivery) or taken over. */
  #accept(id: string, decoded: DecodedRequest, deliveries: number, serverNowMs: number): void {
    if (!decoded.ok) {
      this.#stats.undecodable++;
      const error = new TypeError(`microbatch/redis: replica ${this.consumer} could not read request ${id}: ${decoded.problem}`);
      void this.#answers.send(id, decoded.frontEnd, decoded.requestId, { error });
      return;
    }
    let remainingMs: number | undefined;
    if (decoded.timeoutMs !== undefined) {
      // The entry id's time is the Redis server's clock when the front end added it: judged
      // against the same clock, a replica whose own clock is wrong still drops what expired.
      remainingMs = entryTime(id) + decoded.timeoutMs - serverNowMs;
      if (remainingMs <= 0) {
        this.#stats.expired++;
        void this.#answers.send(id, undefined, undefined, undefined); // the front end has answered its caller
        return;
      }
    }
    if (deliveries > this.#maxDeliveries) {
      this.#stats.poisoned++;
      const n = deliveries - 1;
      const error = new DeliveryLimitError(
        `microbatch/redis: request ${id} was delivered ${n} time${n === 1 ? '' : 's'} and crashed or stalled a replica each time; it is not run again (maxDeliveries ${this.#maxDeliveries})`,
        n,
      );
      void this.#answers.send(id, decoded.frontEnd, decoded.requestId, { error });
      return;
    }
    const held: Held = { id, deliveries, decoded, remainingMs };
    if (deliveries > 1) this.#isolated.push(held);
    else this.#run(held);
  }

  /** Runs a taken-over entry alone: only when the host holds nothing else, one at a time. */
  #runIsolated(): void {
    if (this.#isolated.length === 0 || this.#held.size > 0) return;
    const { queued, runningBatches = 0 } = this.#host.stats;
    if (queued > 0 || runningBatches > 0) return;
    this.#run(this.#isolated.shift()!);
  }

  #run(held: Held): void {
    this.#held.set(held.id, held);
    const { decoded, remainingMs } = held;
    const options: RequestOptions = {};
    if (remainingMs !== undefined) options.timeoutMs = remainingMs;
    if (decoded.priority !== undefined) options.priority = decoded.priority;
    this.#host.inference(decoded.item as never, options).then(
      (value) => this.#answers.send(held.id, decoded.frontEnd, decoded.requestId, { value }),
      (e: unknown) => this.#answers.send(held.id, decoded.frontEnd, decoded.requestId, { error: toError(e, 'the host') }),
    ).finally(() => {
      this.#held.delete(held.id);
      // A taken-over entry ran alone: the next one a dead replica left may be waiting.
      if (held.deliveries > 1) void this.#claim().catch(() => undefined);
      this.#poke();
    });
  }

  /** Keeps the entries of running batches from being taken over. */
  async #renew(): Promise<void> {
    const ids = [...this.#held.keys(), ...this.#isolated.map((h) => h.id)];
    if (ids.length === 0) return;
    await this.#commands.script<string[]>(RENEW, [this.#keys.requests], [this.#group, this.consumer, ...ids]);
  }

  /**
   * Takes over the work of dead replicas (heartbeat expired) and entries idle past claimIdleMs:
   * clears those whose caller is gone, removes dead replicas from the group, and claims one entry
   * when the host is free to run it alone. One at a time, because a taken-over entry may be the
   * poison that killed its last replica: were several held here at once, this replica's crash would
   * count a delivery against each, and the innocent ones would reach maxDeliveries with the guilty
   * one. After each runs, the next is claimed at once. Clearing goes on while the host is busy.
   */
  async #claim(): Promise<void> {
    if (this.#claiming || !this.#commands.up || this.#closing !== undefined) return;
    this.#claiming = true;
    try {
      await this.#claimOne(this.#capacity() > 0 && this.#held.size === 0 ? 1 : 0);
    } finally {
      this.#claiming = false;
    }
  }

  async #claimOne(want: number): Promise<void> {
    const [claimed, events, now] = await this.#commands.script<[Array<[Buffer, Buffer[], number]>, Array<[Buffer, Buffer, number, number, ...Buffer[]]>, number]>(
      TAKEOVER,
      [this.#keys.requests, this.#keys.replicas],
      [this.#group, this.consumer, String(this.#claimIdleMs), String(this.#heartbeatTtlMs), String(want), '64'],
      true,
    );
    for (const [from, reason, cleared, removed, ...ids] of events) this.#tookOver({ from: from.toString(), reason: reason.toString() as RedisTakeover['reason'], claimed: ids.map(String), cleared: Number(cleared), removed: Number(removed) === 1 });
    if (claimed.length === 0) return;
    this.#stats.reclaimed += claimed.length;
    for (const [id, fields, deliveries] of claimed) this.#accept(id.toString(), decodeRequest(fields, this.#maxEntryBytes, this.#revive), Number(deliveries), Number(now));
    // Answered without running (poison, expired, unreadable): look for the next one at once.
    if (this.#isolated.length === 0 && this.#held.size === 0) setImmediate(() => void this.#claim().catch(() => undefined));
    this.#poke();
  }

  #tookOver(takeover: RedisTakeover): void {
    this.#stats.takeovers++;
    this.#stats.cleared += takeover.cleared;
    try {
      this.#onTakeover?.(takeover);
    } catch {
      // a reporting hook must not stop the takeover
    }
  }

  close(options: { graceMs?: number } = {}): Promise<void> {
    this.#closing ??= (async () => {
      const graceMs = options.graceMs === undefined ? 30_000 : checkMs('RedisReplica.close', 'graceMs', options.graceMs, 'zero');
      this.#reader.destroy(); // cuts a blocking read short
      this.#poke();
      await this.#loop;
      // No new work; the heartbeat and renewals go on while answers are still due.
      clearInterval(this.#claimTimer);
      const deadline = Date.now() + graceMs;
      while (this.#held.size > 0 && Date.now() < deadline) await this.#nextChange(Math.min(100, deadline - Date.now()));
      clearInterval(this.#heartbeatTimer);
      clearInterval(this.#renewTimer);
      await this.#commands.script(LEAVE, [this.#keys.requests, this.#keys.replicas], [this.#group, this.consumer]).catch(() => undefined);
      await this.#connections.close();
    })();
    return this.#closing;
  }

  toString(): string {
    return `RedisReplica(${this.consumer} on ${redactUrl(this.#url)})`;
  }
}
