import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linearModel, linearReference, seeded } from '../../support/onnx-models';

// Several processes, one model: one host process serves an onnxruntime model on a Unix socket,
// three client processes send requests at the same time. Every answer is right, requests from
// different processes share batches, and when the host is killed and restarted the clients get a
// clear error, then reconnect and succeed.

const ROOT = join(__dirname, '../../..');
const FIXTURES = join(__dirname, '../../fixtures/workers');
const FEATURES = 4; // socket-client.process.ts uses the same
const OUT = 3;
const CLIENTS = 3;
const PER_CLIENT = 24;

let dir: string;
const children = new Set<ChildProcess>();

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-mp-'));
  writeFileSync(join(dir, 'linear.onnx'), linearModel(FEATURES, OUT));
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function start(file: string, args: string[]): ChildProcess {
  const child = fork(join(FIXTURES, file), args, { cwd: ROOT, execArgv: ['-r', 'ts-node/register/transpile-only'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  return child;
}

/** The next message from `child` that has `key` (bounded, and failing if the child exits first). */
function next<T>(child: ChildProcess, key: string, timeoutMs = 20_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no ${key} message within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (m: unknown): void => {
      if (typeof m === 'object' && m !== null && key in m) done(undefined, (m as Record<string, T>)[key]);
    };
    const onExit = (code: number | null): void => done(new Error(`the process exited (code ${code}) before sending ${key}`));
    const done = (error?: Error, value?: T): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error === undefined) resolve(value as T);
      else reject(error);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

const exited = (child: ChildProcess): Promise<number | null> =>
  child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));

function expectRow(actual: readonly number[], client: number, i: number): void {
  const expected = linearReference(seeded(FEATURES, client * 1000 + i), FEATURES, OUT);
  expect(actual).toHaveLength(OUT);
  actual.forEach((v, j) => expect(v).toBeCloseTo(expected[j]!, 5));
}

test('3 client processes share 1 host process: correct answers, mixed batches, survival of a host restart', async () => {
  const path = join(dir, 'host.sock');
  const hostArgs = [path, join(dir, 'linear.onnx')];
  let host = start('socket-host.process.ts', hostArgs);
  const batches: number[][] = [];
  const record = (m: unknown): void => {
    if (typeof m === 'object' && m !== null && 'batch' in m) batches.push((m as { batch: number[] }).batch);
  };
  host.on('message', record);
  await next(host, 'ready');

  const clients = Array.from({ length: CLIENTS }, (_, id) => start('socket-client.process.ts', [path, String(id)]));
  await Promise.all(clients.map((c) => next(c, 'connected')));

  const answers = clients.map((c) => next<number[][]>(c, 'results'));
  for (const c of clients) c.send({ go: PER_CLIENT });
  const results = await Promise.all(answers);
  results.forEach((rows, client) => {
    expect(rows).toHaveLength(PER_CLIENT);
    rows.forEach((row, i) => expectRow(row, client, i));
  });
  const served = batches.flat();
  expect(served).toHaveLength(CLIENTS * PER_CLIENT);
  const mixed = batches.filter((b) => new Set(b).size > 1);
  expect(mixed.length).toBeGreaterThan(0);

  // The host dies without cleaning up (its socket file stays behind).
  host.kill('SIGKILL');
  await exited(host);
  const probes = clients.map((c) => next<{ name: string; message: string }>(c, 'probe'));
  for (const c of clients) c.send('probe');
  for (const p of await Promise.all(probes)) {
    expect(p.name).toBe('HostUnavailableError');
    // Which message depends on how far the client got when the probe came: it saw the loss, or it
    // already tried to reconnect to the dead socket. Either way an immediate HostUnavailableError.
    expect(p.message).toMatch(/lost its connection to the host|lost while this request was in flight|the client is not connected yet \(connect ECONNREFUSED /);
  }

  // A new host process on the same path (replacing the stale socket file); clients find it again.
  host = start('socket-host.process.ts', hostArgs);
  host.on('message', record);
  await next(host, 'ready');
  const backs = clients.map((c) => next<{ tries: number; result: number[] | null; errors: string[] }>(c, 'back'));
  for (const c of clients) c.send('wait-back');
  (await Promise.all(backs)).forEach((back, client) => {
    expect(back.result).not.toBeNull();
    expectRow(back.result!, client, 7);
    // While reconnecting, the only error a client may see is the clear one.
    expect(back.errors.every((name) => name === 'HostUnavailableError')).toBe(true);
  });

  for (const c of clients) c.send('exit');
  host.send('stop');
  expect(await Promise.all([...clients, host].map(exited))).toEqual([0, 0, 0, 0]);
}, 40_000);
