import { existsSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { describe, toError } from '../../core/describe';
import type { RequestOptions } from '../../core/options';
import { isServableWith, type ServableWith } from '../../core/servable';
import { reviveTensorDefault } from '../../executors/worker/transfer';
import { decodeMessage, encodeMessage, type SocketTensorReviver } from '../wire/codec';
import { FrameDecoder } from '../wire/framing';
import { checkMaxFrameBytes, checkPath, PROTOCOL_VERSION } from './options';

/**
 * What {@link serveHost} exposes: a `Servable` with `inference(item, options)`, a `ModelHost`
 * first of all; its `name`, when present, is announced to clients.
 * @deprecated Use `Servable` (from `microbatch`): `serveHost` takes a `ServableWith<'inference'>`.
 *
 * @example
 * ```ts
 * const target: ServableWith<'inference', Float32Array, Float32Array> = host; // a ModelHost
 * ```
 */
export type InferenceTarget<In = unknown, Out = unknown> = ServableWith<'inference', In, Out>;

/**
 * Options of {@link serveHost}.
 *
 * @example
 * ```ts
 * const options: ServeHostOptions = { path: join(tmpdir(), 'classifier.sock') };
 * ```
 */
export interface ServeHostOptions {
  /**
   * Where to listen: a Unix socket path (keep it short: about 100 bytes at most) or, on Windows, a
   * named pipe `\\.\pipe\name`. A stale socket file left by a dead host is replaced; a live one
   * makes `serveHost` reject.
   */
  path: string;
  /**
   * Largest frame accepted from a client; a larger one closes that connection.
   * @default 268435456 (256 MiB)
   */
  maxFrameBytes?: number;
  /**
   * Builds tensors from tensors that clients sent as class instances.
   * @default an onnxruntime-node `Tensor` when onnxruntime-node loads here, else a plain `{ type, data, dims }`
   */
  tensor?: (type: string, data: unknown, dims: readonly number[]) => unknown;
}

/**
 * A running socket server, from {@link serveHost}.
 *
 * @example
 * ```ts
 * const server = await serveHost(host, { path });
 * process.on('SIGTERM', async () => { await server.close(); await host.stop(); });
 * ```
 */
export interface SocketHostServer {
  /** The path it listens on. */
  readonly path: string;
  /** Clients connected now. */
  readonly connections: number;
  /**
   * Stops accepting connections, waits for the answers to requests already received (at most
   * `graceMs`; still-pending ones are then aborted), and closes every connection. Does not stop the
   * host, which belongs to the caller. Idempotent.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

interface Connection {
  readonly socket: Socket;
  readonly pending: Map<number, AbortController>;
  readonly settled: Set<Promise<void>>;
}

/**
 * Exposes a host to other processes on a Unix socket (or Windows named pipe), so that several
 * processes (a `node:cluster` HTTP server, PM2 instances) share one model and their requests are
 * batched together. Clients use {@link connectHost}. Requests carry their `timeoutMs` and
 * `priority`; a client that cancels (signal, timeout) or disconnects aborts its queued requests
 * here. Frames are length-prefixed: a JSON header plus the raw bytes of typed arrays and tensors.
 *
 * @param host - the host to expose (a `ModelHost`, or anything with `inference`).
 * @param options - where to listen.
 *
 * @example
 * ```ts
 * const host = await createHost(require.resolve('./model.worker'), { maxBatchSize: 32 });
 * const server = await serveHost(host, { path: '/tmp/model.sock' });
 * // in each client process: const model = await connectHost('/tmp/model.sock');
 * ```
 */
export async function serveHost(host: ServableWith<'inference', unknown>, options: ServeHostOptions): Promise<SocketHostServer> {
  const where = 'serveHost';
  if (!isServableWith(host, ['inference'])) {
    throw new TypeError(`${where}: expected a host with inference(item, options), such as a ModelHost; got ${describe(host)}`);
  }
  const path = checkPath(where, options?.path);
  const maxFrameBytes = checkMaxFrameBytes(where, options.maxFrameBytes);
  const factory = options.tensor;
  const reviveTensor: SocketTensorReviver = factory === undefined ? reviveTensorDefault : (_c, type, data, dims) => factory(type, data, dims);
  const connections = new Set<Connection>();
  const hello = encodeMessage({ t: 'hello', p: PROTOCOL_VERSION, name: typeof host.name === 'string' ? host.name : undefined });

  const server = createServer((socket) => {
    const conn: Connection = { socket, pending: new Map(), settled: new Set() };
    connections.add(conn);
    const decoder = new FrameDecoder(maxFrameBytes);
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const frame of decoder.push(chunk)) handle(conn, decodeMessage(frame, reviveTensor));
      } catch {
        // A client that speaks garbage loses its connection; other clients are unaffected.
        socket.destroy();
      }
    });
    socket.on('error', () => undefined); // 'close' follows and does the cleanup
    socket.on('close', () => {
      connections.delete(conn);
      // Its callers are gone: drop their queued requests instead of running them for nobody.
      for (const ac of conn.pending.values()) ac.abort(new Error('the client disconnected'));
    });
    writeFrame(socket, hello);
  });

  const handle = (conn: Connection, msg: ReturnType<typeof decodeMessage>): void => {
    const id = msg.id;
    if (typeof id !== 'number') throw new Error('a message without an id');
    if (msg.t === 'cancel') {
      conn.pending.get(id)?.abort(new Error('cancelled by the client'));
      return;
    }
    if (msg.t !== 'req') throw new Error(`an unknown message type ${JSON.stringify(msg.t)}`);
    const ac = new AbortController();
    conn.pending.set(id, ac);
    const o = (msg.o ?? {}) as { timeoutMs?: unknown; priority?: unknown };
    const requestOptions: RequestOptions = { signal: ac.signal };
    if (typeof o.timeoutMs === 'number') requestOptions.timeoutMs = o.timeoutMs;
    if (typeof o.priority === 'number') requestOptions.priority = o.priority;
    const answer = (fields: Record<string, unknown>, value?: unknown, hasValue = false): void => {
      conn.pending.delete(id);
      conn.settled.delete(done);
      if (conn.socket.destroyed) return;
      let frame: Buffer[];
      try {
        frame = hasValue ? encodeMessage(fields, value) : encodeMessage(fields);
      } catch (e) {
        frame = encodeMessage({ t: 'err', id }, new TypeError(`the host's answer cannot be sent over the socket: ${toError(e, 'encoding').message}`));
      }
      writeFrame(conn.socket, frame);
    };
    const done: Promise<void> = Promise.resolve()
      .then(() => host.inference(msg.value, requestOptions))
      .then(
        (value) => answer({ t: 'res', id }, value, true),
        (e: unknown) => answer({ t: 'err', id }, toError(e, 'The host'), true),
      );
    conn.settled.add(done);
  };

  await listen(server, path);

  let closing: Promise<void> | undefined;
  return {
    path,
    get connections() {
      return connections.size;
    },
    close({ graceMs = 5_000 } = {}) {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        const inFlight = [...connections].flatMap((c) => [...c.settled]);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.all(inFlight), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
        clearTimeout(timer);
        for (const c of connections) c.socket.destroy();
        await closed;
      })();
      return closing;
    },
  };
}

function writeFrame(socket: Socket, buffers: readonly Buffer[]): void {
  // Corked: the prefix, header and segments leave as one write, without being joined in memory.
  socket.cork();
  for (const b of buffers) socket.write(b);
  process.nextTick(() => socket.uncork());
}

/** Listens on `path`, replacing a stale socket file (one nobody answers on) once. */
async function listen(server: Server, path: string): Promise<void> {
  const attempt = (): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  try {
    await attempt();
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'EADDRINUSE' || process.platform === 'win32' || !existsSync(path)) throw e;
    if (await isLive(path)) throw new Error(`serveHost: another process is already serving on ${path}`, { cause: e });
    unlinkSync(path);
    await attempt();
  }
}

/** Whether something accepts connections on `path` (a live host), as opposed to a stale file. */
function isLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}
