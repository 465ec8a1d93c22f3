import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const FIXTURE = join(__dirname, '../fixtures/redis/replica.process.ts');

/** A replica process started from test/fixtures/redis/replica.process.ts, and what it printed. */
export interface ChildReplica {
  readonly name: string;
  readonly process: ChildProcess;
  /** Batches it started, as the values of their items. */
  readonly batches: number[][];
  /** Its stats, once it printed them (after SIGTERM). */
  stats: Record<string, number> | undefined;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  /** Resolves when it has started `n` batches in all. */
  batchesStarted(n: number): Promise<void>;
  /** SIGTERM, and wait for its stats and exit. */
  stop(): Promise<void>;
}

export async function startReplica(config: { url: string; model: string; name: string; claimIdleMs?: number; maxDeliveries?: number; maxBatchSize?: number }): Promise<ChildReplica> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', FIXTURE, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const waiters: Array<() => void> = [];
  let stderr = '';
  let buffered = '';
  const replica: ChildReplica = {
    name: config.name,
    process: child,
    batches: [],
    stats: undefined,
    exited: new Promise((resolve) => child.once('exit', () => resolve())),
    batchesStarted(n) {
      return new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (replica.batches.length >= n) resolve();
          else if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`${config.name} exited after ${replica.batches.length} batches, before ${n}`));
          else waiters.push(check);
        };
        check();
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await replica.exited;
    },
  };
  let ready: () => void = () => undefined;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const event = JSON.parse(line) as { ready?: string; batch?: number[]; stats?: Record<string, number> };
      if (event.ready !== undefined) ready();
      if (event.batch !== undefined) replica.batches.push(event.batch);
      if (event.stats !== undefined) replica.stats = event.stats;
      for (const w of waiters.splice(0)) w();
    }
  });
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  child.once('exit', () => {
    ready();
    for (const w of waiters.splice(0)) w();
  });
  await isReady;
  if (child.exitCode !== null) throw new Error(`replica ${config.name} failed to start:\n${stderr}`);
  return replica;
}
