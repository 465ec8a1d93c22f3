import { createConnection, type Socket } from 'node:net';
import { describe } from '../../core/describe';
import { HostStoppedError } from '../../core/errors';
import { checkMs, fail, optionKeys, rejectUnknownKeys, type RequestOptions } from '../../core/options';
import { checkRequestOptions } from '../../engine/request-options';
import { abortedBefore, remoteAborted, remoteTimedOut } from '../../engine/settle-errors';
import { PendingCalls } from '../pending-calls';
import { reviveTensorDefault } from '../../executors/worker/transfer';
import { decodeMessage, encodeMessage, type Message, type SocketTensorReviver } from '../wire/codec';
import { HostUnavailableError } from '../wire/errors';
import { FrameDecoder } from '../wire/framing';
import { checkMaxFrameBytes, checkPath, PROTOCOL_VERSION } from './options';

/**
 * Options of {@link connectHost}.
 *
 * @example
 * ```ts
 * const options: ConnectHostOptions = { connectTimeoutMs: 30_000, timeoutMs: 2_000 };
 * ```
 */
export interface ConnectHostOptions {
  /**
   * How long `connectHost` keeps trying to reach the host (with backoff) before it rejects with
   * {@link HostUnavailableError}. Lets clients start before, or together with, the host.
   * @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * First delay before reconnecting after the connection is lost; doubled on each failed attempt.
   * @default 50
   */
  minBackoffMs?: number;
  /**
   * Longest delay between reconnection attempts.
   * @default 2000
   */
  maxBackoffMs?: number;
  /**
   * Default per-request time limit (each call may override it), enforced here and sent to the host,
   * which drops the request from its queue when it expires. `Infinity` means none.
   * @default Infinity
   */
  timeoutMs?: number;
  /**
   * Largest frame accepted from the host; a larger one drops the connection.
   * @default 268435456 (256 MiB)
   */
  maxFrameBytes?: number;
  /**
   * Builds tensors from tensors the host answered with as class instances.
   * @default an onnxruntime-node `Tensor` when onnxruntime-node loads here, else a plain `{ type, data, dims }`
   */
  tensor?: (type: string, data: unknown, dims: readonly number[]) => unknown;
}

const KEYS = optionKeys<ConnectHostOptions>({ connectTimeoutMs: true, minBackoffMs: true, maxBackoffMs: true, timeoutMs: true, maxFrameBytes: true, tensor: true });

type State = 'connecting' | 'connected' | 'disconnected' | 'closed';

/**
 * A connection to a host served with {@link serveHost} in another process: `inference()` has the
 * host's signature and behaviour, and the requests of every client are batched together there.
 *
 * - Errors come back typed (`QueueFullError`, `DeadlineExceededError`, `HostStoppedError`,
 *   `AbortError`, `BatchSizeMismatchError`, the model's own error by name).
 * - `timeoutMs` and `signal` are honoured here (the caller is answered at once) and forwarded, so
 *   the host drops the request if it has not run yet.
 * - When the host goes away, requests in flight reject with {@link HostUnavailableError}, new ones
 *   reject with it at once (never hang), and the client reconnects in the background with
 *   exponential backoff until the host is back.
 * - An idle client does not keep the process alive; `close()` ends it for good.
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 *
 * @example
 * ```ts
 * const model = await connectHost<Float32Array, Float32Array>('/tmp/model.sock');
 * const y = await model.inference(row, { timeoutMs: 500 });
 * await model.close();
 * ```
 */
export class SocketHostClient<In = unknown, Out = unknown> implements AsyncDisposable {
  /** The socket path of the host. */
  readonly path: string;
  readonly #timeoutMs: number;
  readonly #minBackoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #maxFrameBytes: number;
  readonly #reviveTensor: SocketTensorReviver;
  #state: State = 'connecting';
  #socket: Socket | undefined;
  #attempt = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #lastError: Error | undefined;
  #hostName: string | undefined;
  #nextId = 1;
  readonly #pending = new PendingCalls<number>(() => this.#refreshRef());
  #waiters: Array<() => void> = [];
  #closing: Promise<void> | undefined;

  /**
   * Starts connecting at once; prefer {@link connectHost}, which also waits for the connection.
   * @param path - the host's socket path (or Windows named pipe).
   * @param options - reconnection, default timeout and limits.
   */
  constructor(path: string, options: ConnectHostOptions = {}) {
    const where = 'connectHost';
    this.path = checkPath(where, path);
    if (typeof options !== 'object' || options === null) fail(where, 'options', 'an object', options);
    rejectUnknownKeys(where, options, KEYS);
    this.#timeoutMs = options.timeoutMs === undefined ? Infinity : checkMs(where, 'timeoutMs', options.timeoutMs, 'positive');
    this.#minBackoffMs = options.minBackoffMs === undefined ? 50 : checkMs(where, 'minBackoffMs', options.minBackoffMs, 'positive');
    this.#maxBackoffMs = options.maxBackoffMs === undefined ? 2_000 : checkMs(where, 'maxBackoffMs', options.maxBackoffMs, 'positive');
    this.#maxFrameBytes = checkMaxFrameBytes(where, options.maxFrameBytes);
    if (options.tensor !== undefined && typeof options.tensor !== 'function') fail(where, 'tensor', 'a function (type, data, dims) => tensor', options.tensor);
    const factory = options.tensor;
    this.#reviveTensor = factory === undefined ? reviveTensorDefault : (_c, type, data, dims) => factory(type, data, dims);
    this.#connect();
  }

  /** True while connected to a live host. */
  get connected(): boolean {
    return this.#state === 'connected';
  }

  /** The host's `name`, as it announced itself (undefined before the first connection). */
  get hostName(): string | undefined {
    return this.#hostName;
  }

  /** The same as {@link hostName}: the name `Servable` consumers read. */
  get name(): string | undefined {
    return this.#hostName;
  }

  /** The same as `close()`: how `Servable` consumers (a server closing) end it. */
  stop(): Promise<void> {
    return this.close();
  }

  /**
   * Sends one item to the host and resolves with its result, batched there with every other
   * client's requests. Never throws synchronously. Rejects at once with
   * {@link HostUnavailableError} while disconnected, and with `HostStoppedError` after `close()`.
   */
  inference(item: In, options?: RequestOptions): Promise<Out> {
    if (this.#state === 'closed' || this.#closing !== undefined) return Promise.reject(new HostStoppedError(`${this.#name}: the client is closed`));
    let timeoutMs = this.#timeoutMs;
    let signal: AbortSignal | undefined;
    const o: Record<string, number> = {};
    if (options !== undefined) {
      // The engine's own checks, so a mistake reads the same whether the host is here or remote.
      const bad = checkRequestOptions(this.#name, options);
      if (bad !== undefined) return Promise.reject(bad);
      if (options.timeoutMs !== undefined) timeoutMs = options.timeoutMs;
      if (options.priority !== undefined) o.priority = options.priority;
      signal = options.signal;
    }
    if (signal?.aborted) return Promise.reject(abortedBefore(this.#name, signal.reason, 'the request was aborted before it was sent'));
    const socket = this.#socket;
    if (this.#state !== 'connected' || socket === undefined) return Promise.reject(this.#unavailable());
    if (timeoutMs !== Infinity) o.timeoutMs = timeoutMs;
    const id = this.#nextId++;
    let frame: Buffer[];
    try {
      frame = encodeMessage({ t: 'req', id, o }, item);
    } catch (e) {
      return Promise.reject(new TypeError(`${this.#name}.inference: ${(e as Error).message}`));
    }
    const answer = this.#pending.add<Out>(id, {
      timeoutMs,
      signal,
      timeoutError: (elapsed) => remoteTimedOut(this.#name, elapsed, timeoutMs, 'the host'),
      abortError: (reason) => remoteAborted(this.#name, reason, 'while the host had it'),
      onGiveUp: () => this.#cancel(id),
    });
    write(socket, frame);
    return answer;
  }

  /** Alias of {@link SocketHostClient.inference}. */
  predict(item: In, options?: RequestOptions): Promise<Out> {
    return this.inference(item, options);
  }

  /**
   * Resolves once connected (at once if already so); rejects with {@link HostUnavailableError}
   * after `timeoutMs`, or with `HostStoppedError` if the client is closed.
   */
  waitForConnection(timeoutMs = Infinity): Promise<void> {
    if (this.#state === 'connected') return Promise.resolve();
    if (this.#state === 'closed') return Promise.reject(new HostStoppedError(`${this.#name}: the client is closed`));
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        if (this.#state === 'connected') resolve();
        else reject(new HostStoppedError(`${this.#name}: the client was closed before it connected`));
      };
      this.#waiters.push(done);
      if (timeoutMs !== Infinity) {
        timer = setTimeout(() => {
          this.#waiters = this.#waiters.filter((w) => w !== done);
          reject(
            new HostUnavailableError(
              `${this.#name}: could not connect within ${timeoutMs} ms${this.#lastError === undefined ? '' : ` (last error: ${this.#lastError.message})`}; is the host process running and serving on this path?`,
              this.path,
              this.#lastError,
            ),
          );
        }, timeoutMs);
      }
    });
  }

  /**
   * Waits for the answers to requests in flight (or for the connection to drop), then closes the
   * connection and stops reconnecting. Idempotent; later calls of `inference()` reject with
   * `HostStoppedError`.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#pending.drained();
      this.#state = 'closed';
      clearTimeout(this.#retryTimer);
      for (const w of this.#waiters.splice(0)) w();
      const socket = this.#socket;
      this.#socket = undefined;
      if (socket !== undefined && !socket.destroyed) {
        await new Promise<void>((resolve) => {
          socket.once('close', () => resolve());
          socket.end();
          // end() waits for the peer; a peer that never answers must not hold close() forever.
          setTimeout(() => socket.destroy(), 1_000).unref();
        });
      }
    })();
    return this.#closing;
  }

  /** `await using model = await connectHost(path)` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  get #name(): string {
    return `connectHost(${this.path})`;
  }

  #unavailable(): HostUnavailableError {
    const why = this.#lastError === undefined ? '' : ` (${this.#lastError.message})`;
    const what = this.#state === 'connecting' ? 'is not connected yet' : 'lost its connection to the host';
    return new HostUnavailableError(`${this.#name}: the client ${what}${why}; it reconnects by itself: retry later`, this.path, this.#lastError);
  }

  #connect(): void {
    this.#state = 'connecting';
    const socket = createConnection(this.path);
    const decoder = new FrameDecoder(this.#maxFrameBytes);
    let greeted = false;
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const frame of decoder.push(chunk)) {
          const msg = decodeMessage(frame, this.#reviveTensor);
          if (greeted) {
            this.#onMessage(msg);
          } else {
            if (msg.t !== 'hello') throw new Error(`the peer at ${this.path} is not a microbatch host (it did not greet)`);
            if (msg.p !== PROTOCOL_VERSION) throw new Error(`the host speaks protocol ${String(msg.p)}, this client ${PROTOCOL_VERSION}`);
            greeted = true;
            this.#onConnected(socket, typeof msg.name === 'string' ? msg.name : undefined);
          }
        }
      } catch (e) {
        this.#lastError = e as Error;
        socket.destroy();
      }
    });
    socket.on('error', (e) => {
      this.#lastError = e;
    });
    socket.on('close', () => this.#onClose(socket));
  }

  #onConnected(socket: Socket, hostName: string | undefined): void {
    if (this.#state === 'closed') {
      socket.destroy();
      return;
    }
    this.#state = 'connected';
    this.#socket = socket;
    this.#attempt = 0;
    this.#lastError = undefined;
    this.#hostName = hostName;
    this.#refreshRef();
    for (const w of this.#waiters.splice(0)) w();
  }

  #onClose(socket: Socket): void {
    if (this.#socket === socket) this.#socket = undefined;
    const lost = new HostUnavailableError(
      `${this.#name}: the connection to the host was lost while this request was in flight${this.#lastError === undefined ? '' : ` (${this.#lastError.message})`}; it may or may not have run`,
      this.path,
      this.#lastError,
    );
    this.#pending.settleAll(lost);
    if (this.#state === 'closed') return;
    this.#state = 'disconnected';
    const base = Math.min(this.#maxBackoffMs, this.#minBackoffMs * 2 ** this.#attempt);
    this.#attempt = Math.min(this.#attempt + 1, 30);
    // Jitter spreads the reconnections of many clients after a host restart.
    this.#retryTimer = setTimeout(() => this.#connect(), base * (0.5 + Math.random() / 2));
    // A disconnected client must not keep the process alive by itself.
    this.#retryTimer.unref();
  }

  #onMessage(msg: Message): void {
    if ((msg.t !== 'res' && msg.t !== 'err') || typeof msg.id !== 'number') return;
    if (msg.t === 'res') this.#pending.settle(msg.id, undefined, msg.value);
    else this.#pending.settle(msg.id, msg.value instanceof Error ? msg.value : new Error(`the host rejected the request with ${describe(msg.value)}`));
  }

  #cancel(id: number): void {
    const socket = this.#socket;
    if (socket !== undefined && !socket.destroyed) write(socket, encodeMessage({ t: 'cancel', id }));
  }

  /** Requests in flight keep the process alive; an idle connection does not. */
  #refreshRef(): void {
    if (this.#socket === undefined) return;
    if (this.#pending.size > 0) this.#socket.ref();
    else this.#socket.unref();
  }
}

function write(socket: Socket, buffers: readonly Buffer[]): void {
  socket.cork();
  for (const b of buffers) socket.write(b);
  process.nextTick(() => socket.uncork());
}

/**
 * Connects to a host served with {@link serveHost} and resolves once connected, retrying with
 * backoff for up to `connectTimeoutMs` (so clients may start before the host). See
 * {@link SocketHostClient} for the behaviour of the returned client.
 *
 * @param path - the host's socket path (or Windows named pipe).
 * @param options - connection, reconnection and default timeout.
 *
 * @example
 * ```ts
 * // in each cluster worker:
 * const model = await connectHost<Float32Array, Float32Array>('/tmp/model.sock', { timeoutMs: 1_000 });
 * http.createServer(async (req, res) => res.end(JSON.stringify(await model.inference(rowFrom(req))))).listen(8080);
 * ```
 */
export async function connectHost<In = unknown, Out = unknown>(path: string, options: ConnectHostOptions = {}): Promise<SocketHostClient<In, Out>> {
  const client = new SocketHostClient<In, Out>(path, options);
  const limit = options.connectTimeoutMs === undefined ? 10_000 : checkMs('connectHost', 'connectTimeoutMs', options.connectTimeoutMs, 'positive');
  try {
    await client.waitForConnection(limit);
  } catch (e) {
    await client.close();
    throw e;
  }
  return client;
}
