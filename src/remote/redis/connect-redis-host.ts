import { randomBytes } from 'node:crypto';
import { HostStoppedError } from '../../core/errors';
import { checkMs, fail, optionKeys, rejectUnknownKeys, type RequestOptions } from '../../core/options';
import { checkRequestOptions } from '../../engine/request-options';
import { abortedBefore, remoteAborted, remoteTimedOut } from '../../engine/settle-errors';
import { PendingCalls } from '../pending-calls';
import type { SocketTensorReviver } from '../wire/codec';
import { HostUnavailableError } from '../wire/errors';
import { commonOptions, ConnectionPair } from './common';
import type { ConnectRedisHostOptions, PublishedModel, RedisHostClientStats } from './front-end-types';
import { redactUrl, type RedisConnection } from './connection';
import { decodeReply, encodeRequest } from './entry';
import type { RedisKeys } from './keys';
import { ALIVE } from './scripts';
import { ensureGroup, lagOf, metaFields, type RawEntry } from './stream';

const KEYS = optionKeys<ConnectRedisHostOptions>({
  url: true, model: true, group: true, claimIdleMs: true, connectTimeoutMs: true, maxEntryBytes: true, tensor: true, timeoutMs: true,
});

/**
 * A front end of a model served by replicas through Redis (see {@link serveHostOnRedis}).
 * `inference()` behaves as a host's: typed errors, `timeoutMs`, `signal`, `priority`. Requests
 * from every front end are batched together on whichever replica has a free slot.
 *
 * - When Redis cannot be reached, requests in flight reject at once with
 *   {@link HostUnavailableError}, and new ones are refused at once, until it is back (the client
 *   reconnects by itself and re-creates the stream and group if Redis lost them).
 * - `ready` is true while a replica has been seen within `claimIdleMs`: a load balancer's
 *   readiness probe should follow it.
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 */
export class RedisHostClient<In = unknown, Out = unknown> implements AsyncDisposable {
  /** This front end's id (its reply stream is `mb:{model}:rep:<id>`). */
  readonly id: string;
  /** The model's name. */
  readonly modelName: string;
  readonly #where: string;
  readonly #url: string;
  readonly #keys: RedisKeys;
  readonly #group: string;
  readonly #timeoutMs: number;
  readonly #claimIdleMs: number;
  readonly #maxEntryBytes: number;
  readonly #revive: SocketTensorReviver;
  readonly #commands: RedisConnection;
  readonly #reader: RedisConnection;
  readonly #connections: ConnectionPair;
  readonly #pending = new PendingCalls<string>();
  #nextId = 1;
  #lastReply = '0-0';
  #closing: Promise<void> | undefined;
  #closed = false;
  #readLoop: Promise<void> | undefined;
  #statusTimer: NodeJS.Timeout | undefined;
  #model: PublishedModel | undefined;
  #maxBatchSize: number | undefined;
  #stats = { sent: 0, answered: 0, duplicatesDropped: 0, queueDepth: 0, lag: 0, replicas: 0 };

  /** @internal Use {@link connectRedisHost}. */
  constructor(options: ConnectRedisHostOptions) {
    const where = 'connectRedisHost';
    if (typeof options !== 'object' || options === null) fail(where, 'options', 'an object { url, model, ... }', options);
    rejectUnknownKeys(where, options, KEYS);
    const common = commonOptions(where, options);
    ({ url: this.#url, keys: this.#keys, group: this.#group, claimIdleMs: this.#claimIdleMs, maxEntryBytes: this.#maxEntryBytes, revive: this.#revive } = common);
    this.modelName = options.model;
    this.#timeoutMs = options.timeoutMs === undefined ? Infinity : checkMs(where, 'timeoutMs', options.timeoutMs, 'positive');
    this.#where = `connectRedisHost(${options.model})`;
    this.id = randomBytes(9).toString('base64url');
    this.#connections = new ConnectionPair(where, this.#url, common.connectTimeoutMs, {
      onDown: (e) => this.#lost(e),
      onUp: () => void this.#prepare().catch(() => undefined),
    });
    this.#commands = this.#connections.commands;
    this.#reader = this.#connections.reader;
  }

  /** @internal */
  async open(): Promise<void> {
    await this.#connections.open(() => this.#prepare());
    this.#readLoop = this.#readReplies();
    this.#statusTimer = setInterval(() => void this.#poll().catch(() => undefined), Math.max(50, Math.min(1_000, this.#claimIdleMs / 3)));
    this.#statusTimer.unref();
  }

  /** The same as {@link modelName}: the name `Servable` consumers read. */
  get name(): string {
    return this.modelName;
  }

  /** True while Redis is reachable and a replica has been seen within `claimIdleMs`. */
  get ready(): boolean {
    return this.#commands.up && this.#stats.replicas > 0 && !this.#closed;
  }

  /**
   * The model's inputs and outputs as a replica published them (a host from `microbatch/onnx` has
   * them), so that `createInferenceServer` can check requests; empty until a replica has published.
   */
  get model(): PublishedModel {
    return this.#model ?? { inputs: [], outputs: [] };
  }

  /**
   * The replicas' `maxBatchSize`, once a replica has published it, and this front end's own
   * `timeoutMs` (when it has one), which the HTTP server then holds to unless a client asks for less.
   */
  get options(): { readonly maxBatchSize: number; readonly timeoutMs?: number } | undefined {
    if (this.#maxBatchSize === undefined) return undefined;
    return this.#timeoutMs === Infinity ? { maxBatchSize: this.#maxBatchSize } : { maxBatchSize: this.#maxBatchSize, timeoutMs: this.#timeoutMs };
  }

  /** Counters; queue depth, lag and replicas are polled about every `claimIdleMs / 3` (at most 1 s). */
  get stats(): RedisHostClientStats {
    return { ...this.#stats, inFlight: this.#pending.size, queued: this.#pending.size, running: 0 };
  }

  /**
   * Sends one request to the replicas; resolves with its result. Rejects with the replica's error
   * (its class survives), {@link HostUnavailableError} when Redis cannot be reached,
   * `DeadlineExceededError` after `timeoutMs`, `AbortError` when `signal` aborts, and
   * `HostStoppedError` after `close()`.
   */
  inference(item: In, options?: RequestOptions): Promise<Out> {
    const where = `${this.#where}.inference`;
    if (this.#closing !== undefined) return Promise.reject(new HostStoppedError(`${this.#where}: the client is closed`));
    let timeoutMs = this.#timeoutMs;
    let priority: number | undefined;
    let signal: AbortSignal | undefined;
    if (options !== undefined) {
      const bad = checkRequestOptions(this.#where, options);
      if (bad !== undefined) return Promise.reject(bad);
      if (options.timeoutMs !== undefined) timeoutMs = options.timeoutMs;
      priority = options.priority;
      signal = options.signal;
    }
    if (signal?.aborted) return Promise.reject(abortedBefore(this.#where, signal.reason, 'the request was aborted before it was sent'));
    if (!this.#commands.up) return Promise.reject(this.#unavailable('cannot reach Redis'));
    const requestId = String(this.#nextId++);
    let fields: Array<string | Buffer>;
    try {
      fields = encodeRequest({ frontEnd: this.id, requestId, timeoutMs: timeoutMs === Infinity ? undefined : timeoutMs, priority }, item);
    } catch (e) {
      return Promise.reject(new TypeError(`${where}: ${(e as Error).message}`));
    }
    // The stream entry, once XADD has answered: taken back (deleted) when the caller gives up.
    let entryId: string | undefined;
    let gaveUp = false;
    const answer = this.#pending.add<Out>(requestId, {
      timeoutMs,
      signal,
      timeoutError: (elapsed) => remoteTimedOut(this.#where, elapsed, timeoutMs, 'a replica'),
      abortError: (reason) => remoteAborted(this.#where, reason, 'while it waited for a replica'),
      onGiveUp: () => {
        gaveUp = true;
        if (entryId !== undefined) void this.#delete(entryId);
      },
    });
    this.#stats.sent++;
    this.#commands.command<string>(['XADD', this.#keys.requests, '*', ...fields]).then(
      (id) => {
        entryId = id;
        if (gaveUp) void this.#delete(id);
      },
      (e: Error) => this.#pending.settle(requestId, this.#unavailable('could not add the request to Redis', e)),
    );
    return answer;
  }

  /** Alias of {@link RedisHostClient.inference}. */
  predict(item: In, options?: RequestOptions): Promise<Out> {
    return this.inference(item, options);
  }

  /**
   * Waits for the requests in flight, then disconnects; later calls reject with
   * `HostStoppedError`. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#pending.drained();
      this.#closed = true;
      clearInterval(this.#statusTimer);
      this.#reader.destroy();
      await this.#readLoop;
      await this.#connections.close();
    })();
    return this.#closing;
  }

  /** For `createInferenceServer`, which stops what it serves: closes this front end (the replicas go on). */
  stop(): Promise<void> {
    return this.close();
  }

  /** `await using model = await connectRedisHost(...)` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  toString(): string {
    return `RedisHostClient(${this.modelName} on ${redactUrl(this.#url)})`;
  }

  async #prepare(): Promise<void> {
    await ensureGroup(this.#commands, this.#keys.requests, this.#group);
    // After a Redis restart the reply stream starts anew: read it from its start.
    this.#lastReply = '0-0';
    await this.#poll();
  }

  /** Replicas alive, queue depth, lag, and what the replicas published about the model. */
  async #poll(): Promise<void> {
    const [replicas, depth, groups, meta] = await Promise.all([
      this.#commands.script<number>(ALIVE, [this.#keys.replicas], [String(this.#claimIdleMs)]),
      this.#commands.command<number>(['XLEN', this.#keys.requests]),
      this.#commands.command<unknown[]>(['XINFO', 'GROUPS', this.#keys.requests]).catch(() => []),
      this.#commands.command<unknown[]>(['HGETALL', this.#keys.meta]),
    ]);
    this.#stats.replicas = Number(replicas);
    this.#stats.queueDepth = Number(depth);
    this.#stats.lag = lagOf(groups, this.#group);
    const fields = metaFields(meta);
    if (fields.model !== undefined) {
      try {
        this.#model = JSON.parse(fields.model) as PublishedModel;
      } catch {
        // a replica that published something else: keep what we had
      }
    }
    if (fields.maxBatchSize !== undefined && Number(fields.maxBatchSize) >= 1) this.#maxBatchSize = Number(fields.maxBatchSize);
  }

  async #readReplies(): Promise<void> {
    let backoff = 0;
    while (!this.#closed) {
      try {
        const reply = await this.#reader.command<Array<[Buffer, RawEntry[]]> | null>(['XREAD', 'COUNT', '512', 'BLOCK', '1000', 'STREAMS', this.#keys.reply(this.id), this.#lastReply], true);
        backoff = 0;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length === 0) continue;
        const ids: string[] = [];
        for (const [rawId, fields] of entries) {
          const id = rawId.toString();
          ids.push(id);
          this.#lastReply = id;
          this.#onReply(fields ?? []);
        }
        void this.#commands.command(['XDEL', this.#keys.reply(this.id), ...ids]).catch(() => undefined);
      } catch {
        if (this.#closed) return;
        backoff = Math.min(1_000, Math.max(25, backoff * 2));
        await new Promise((r) => setTimeout(r, backoff));
      }
    }
  }

  #onReply(fields: Buffer[]): void {
    let reply: ReturnType<typeof decodeReply>;
    try {
      reply = decodeReply(fields, this.#maxEntryBytes, this.#revive);
    } catch {
      this.#stats.duplicatesDropped++; // nothing to answer with: not ours to read
      return;
    }
    const settled = 'error' in reply ? this.#pending.settle(reply.requestId, reply.error) : this.#pending.settle(reply.requestId, undefined, reply.value);
    if (settled) this.#stats.answered++;
    else this.#stats.duplicatesDropped++;
  }

  /** Deletes a request entry; a replica that already read it skips or answers it, to no one. */
  #delete(entryId: string): Promise<unknown> {
    return this.#commands.command(['XDEL', this.#keys.requests, entryId]).catch(() => undefined);
  }

  #lost(cause: Error | undefined): void {
    const error = this.#unavailable('lost its connection to Redis while the request was in flight; it may or may not have run', cause);
    this.#pending.settleAll(error);
  }

  #unavailable(what: string, cause?: Error): HostUnavailableError {
    const why = cause ?? this.#commands.lastError;
    return new HostUnavailableError(
      `${this.#where}: the client ${what}${why === undefined ? '' : ` (${why.message})`}; it reconnects by itself: retry later`,
      redactUrl(this.#url),
      why,
    );
  }
}

/**
 * Connects a front end to a model served through Redis by {@link serveHostOnRedis} replicas.
 * Resolves once connected (replicas may start later: requests wait in Redis for them).
 *
 * @example
 * ```ts
 * const model = await connectRedisHost<Float32Array, Float32Array>({ url: process.env.REDIS_URL!, model: 'classifier', timeoutMs: 2_000 });
 * const y = await model.inference(x); // batched on a replica with requests from every front end
 * await model.close();
 * ```
 */
export async function connectRedisHost<In = unknown, Out = unknown>(options: ConnectRedisHostOptions): Promise<RedisHostClient<In, Out>> {
  const client = new RedisHostClient<In, Out>(options);
  await client.open();
  return client;
}
