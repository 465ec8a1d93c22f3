import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelHost } from '../../../src/engine/model-host';
import { AbortError, BatchSizeMismatchError, DeadlineExceededError, HostStoppedError, QueueFullError } from '../../../src/core/errors';
import { connectHost, HostUnavailableError, serveHost, type SocketHostClient } from '../../../src/remote/socket';
import { waitFor } from '../../support/wait-for';

// A host served on a Unix socket, with clients in this process: the transport, typed errors,
// client-side deadlines, and what clients see when the host goes away and comes back.

let dir: string;
let n = 0;
const socketPath = (): string => join(dir, `h${n++}.sock`);
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-sock-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A model whose calls wait until the test releases them; records each batch's items. */
function gatedModel() {
  const batches: string[][] = [];
  let open!: () => void;
  let gate = new Promise<void>((r) => (open = r));
  return {
    batches,
    release: () => {
      open();
      gate = new Promise<void>((r) => (open = r));
    },
    fn: async (items: readonly string[]): Promise<Array<string | Error>> => {
      batches.push([...items]);
      await gate;
      return items.map((s) => (s === 'bad' ? Object.assign(new Error(`cannot score ${s}`), { name: 'ScoreError' }) : s.toUpperCase()));
    },
  };
}

test('requests of two clients share a batch; per-item and typed host errors come back as such', async () => {
  const model = gatedModel();
  const host = new ModelHost<string, string>(model.fn, { maxBatchSize: 8, maxQueueSize: 3, name: 'upper' });
  const path = socketPath();
  const server = await serveHost(host, { path });
  const a = await connectHost<string, string>(path);
  const b = await connectHost<string, string>(path);
  try {
    expect(a.hostName).toBe('upper');
    const first = a.inference('warm'); // runs alone and holds the model
    await waitFor(() => model.batches.length === 1);
    const queued = [a.inference('x'), b.inference('y'), b.inference('bad')];
    await waitFor(() => host.stats.queued === 3);
    await expect(a.inference('one too many')).rejects.toBeInstanceOf(QueueFullError);
    model.release();
    await expect(first).resolves.toBe('WARM');
    await waitFor(() => model.batches.length === 2);
    model.release();
    const [x, y, bad] = await Promise.allSettled(queued);
    expect(model.batches[1]).toEqual(['x', 'y', 'bad']);
    expect([x, y]).toEqual([
      { status: 'fulfilled', value: 'X' },
      { status: 'fulfilled', value: 'Y' },
    ]);
    const e = (bad as PromiseRejectedResult).reason as Error;
    expect(e).toBeInstanceOf(Error);
    expect(e).toMatchObject({ name: 'ScoreError', message: 'cannot score bad' });
  } finally {
    await Promise.all([a.close(), b.close()]);
    await server.close();
    await host.stop();
  }
});

test('timeoutMs and signal are honoured by the client; BatchSizeMismatchError and HostStoppedError cross typed', async () => {
  const model = gatedModel();
  const host = new ModelHost<string, string>(model.fn, { maxBatchSize: 4 });
  const broken = new ModelHost<string, string>(async () => [], { maxBatchSize: 4 });
  const [path, brokenPath] = [socketPath(), socketPath()];
  const servers = await Promise.all([serveHost(host, { path }), serveHost(broken, { path: brokenPath })]);
  const client = await connectHost<string, string>(path);
  const brokenClient = await connectHost<string, string>(brokenPath);
  try {
    const started = Date.now();
    await expect(client.inference('slow', { timeoutMs: 100 })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(Date.now() - started).toBeLessThan(2_000);
    const ac = new AbortController();
    const aborted = client.inference('stop me', { signal: ac.signal });
    ac.abort(new Error('user left'));
    await expect(aborted).rejects.toBeInstanceOf(AbortError);
    await expect(client.inference('x', { signal: ac.signal })).rejects.toThrow(/aborted before it was sent/);
    model.release();

    const mismatch = await brokenClient.inference('x').catch((e: unknown) => e as BatchSizeMismatchError);
    expect(mismatch).toBeInstanceOf(BatchSizeMismatchError);
    expect(mismatch).toMatchObject({ expected: 1, actual: 0 });

    await broken.stop();
    await expect(brokenClient.inference('x')).rejects.toBeInstanceOf(HostStoppedError);
  } finally {
    model.release();
    await Promise.all([client.close(), brokenClient.close()]);
    await Promise.all(servers.map((s) => s.close()));
    await host.stop();
  }
});

test('a host that goes away: in-flight and new requests reject with HostUnavailableError at once; the client reconnects when it is back', async () => {
  const model = gatedModel();
  const host = new ModelHost<string, string>(model.fn, { maxBatchSize: 4 });
  const path = socketPath();
  let server = await serveHost(host, { path });
  const client: SocketHostClient<string, string> = await connectHost<string, string>(path, { minBackoffMs: 20, maxBackoffMs: 100 });
  try {
    const inFlight = client.inference('never answered');
    await waitFor(() => model.batches.length === 1);
    await server.close({ graceMs: 50 });
    await expect(inFlight).rejects.toThrow(HostUnavailableError);
    await expect(inFlight).rejects.toThrow(/lost while this request was in flight/);
    expect(client.connected).toBe(false);
    const started = Date.now();
    await expect(client.inference('while down')).rejects.toThrow(HostUnavailableError);
    // Nothing is queued for a reconnect (the server stays down, so a queued request would hang):
    // the bound only has to be far above one tick, even on a loaded CI machine.
    expect(Date.now() - started).toBeLessThan(1_000);

    model.release();
    server = await serveHost(host, { path });
    await client.waitForConnection(5_000);
    const back = client.inference('back');
    await waitFor(() => model.batches.length === 2);
    model.release();
    await expect(back).resolves.toBe('BACK');
  } finally {
    model.release();
    await client.close();
    await server.close();
    await host.stop();
  }
  await expect(client.inference('after close')).rejects.toBeInstanceOf(HostStoppedError);
});

test('connectHost rejects clearly when nothing serves the path; serveHost replaces a stale file but not a live host', async () => {
  const path = socketPath();
  const error = (await connectHost(path, { connectTimeoutMs: 200 }).catch((e: unknown) => e)) as Error;
  expect(error).toBeInstanceOf(HostUnavailableError);
  expect(error.message).toMatch(/could not connect within 200 ms \(last error: .*ENOENT/);

  writeFileSync(path, 'left over');
  const host = new ModelHost<string, string>(async (xs) => xs.map((x) => x), { maxBatchSize: 2 });
  const server = await serveHost(host, { path });
  try {
    await expect(serveHost(host, { path })).rejects.toThrow(/another process is already serving/);
    const client = await connectHost<string, string>(path);
    await expect(client.inference('ok')).resolves.toBe('ok');
    await client.close();
  } finally {
    await server.close();
    await host.stop();
  }
});

test('the client checks request options with the engine\'s checks and messages', async () => {
  const host = new ModelHost<string, string>(async (items) => items.map((s) => s.toUpperCase()), { maxBatchSize: 4, name: 'same' });
  const path = socketPath();
  const server = await serveHost(host, { path });
  const client = await connectHost<string, string>(path);
  try {
    for (const bad of [{ priority: '1' }, { timeoutMs: 0 }, { signal: { aborted: false } }, { colour: 1 }]) {
      const local = await host.inference('x', bad as never).catch((e: Error) => e);
      const remote = await client.inference('x', bad as never).catch((e: Error) => e);
      expect(remote).toBeInstanceOf(Error);
      expect((remote as Error).constructor).toBe((local as Error).constructor);
      // Same text after the host's name (the client is named after its socket).
      expect((remote as Error).message.replace(/^.*?\.inference:/, '.inference:')).toBe((local as Error).message.replace(/^same\.inference:/, '.inference:'));
    }
  } finally {
    await client.close();
    await server.close();
    await host.stop();
  }
});
