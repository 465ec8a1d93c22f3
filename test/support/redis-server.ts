import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWith } from './describe-with';

/**
 * A real redis-server for the tests, started on a free local port with persistence off, and
 * stopped (or killed and restarted, to test recovery) by the test. Under CI it must start (CI
 * installs Debian's redis-server); elsewhere the Redis tests skip with a message saying how to get it.
 */
export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Kills the server (SIGKILL: nothing is saved). */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Why the Redis tests cannot run here, or undefined when they can. */
export function redisUnavailable(): string | undefined {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) return undefined;
  return 'redis-server is not installed (Debian: apt-get install -y redis-server)';
}

/** `describe` when redis-server exists; under CI a missing server fails instead of skipping. */
export function describeWithRedis(name: string, body: () => void): void {
  describeWith(name, redisUnavailable(), body);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function launch(port: number, dir: string, extra: readonly string[]): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start within 10 s:\n${output}`)), 10_000);
    child.stdout!.on('data', (c: Buffer) => {
      output += c.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}:\n${output}`));
    });
  });
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

/** Starts a server; `extra` are more redis-server arguments (e.g. `['--requirepass', 'pw']`). */
export async function startRedis(extra: readonly string[] = []): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mb-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined = await launch(port, dir, extra);
  const exited = (c: ChildProcess): Promise<void> => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', () => r())));
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async kill() {
      if (child === undefined) return;
      const c = child;
      child = undefined;
      c.kill('SIGKILL');
      await exited(c);
    },
    async restart() {
      if (child !== undefined) throw new Error('redis-server is still running');
      child = await launch(port, dir, extra);
    },
    async stop() {
      const c = child;
      child = undefined;
      if (c !== undefined) {
        c.kill('SIGTERM');
        await exited(c);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
