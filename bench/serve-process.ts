/**
 * `microbatch serve` as its own process for the served-path benchmarks (bench/served.ts,
 * bench/grpc.ts): started from a checkout's built `dist/` on free ports, as a user runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** CPU seconds (user + system) so far from a `/proc` stat file: a process's (`/proc/<pid>/stat`) or one thread's (`/proc/<pid>/task/<tid>/stat`). */
export function cpuSeconds(statPath: string): number {
  const fields = readFileSync(statPath, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ on Linux
}

/** A running server: the process, its HTTP port, and its gRPC port when `--grpc-port` was given. */
export interface ServeProcess {
  readonly child: ChildProcess;
  readonly httpPort: number;
  readonly grpcPort?: number;
}

/**
 * Starts `node <tree>/bin/microbatch.js serve <args>` (`node` flags first, then `SERVE_ARGS`: see
 * {@link extraServeArgs}) and resolves once it
 * prints where it listens: HTTP, and gRPC too when `args` has `--grpc-port`.
 */
export function startServe(tree: string, args: readonly string[], node: readonly string[] = []): Promise<ServeProcess> {
  const child = spawn(process.execPath, [...node, join(tree, 'bin', 'microbatch.js'), 'serve', ...args, ...extraServeArgs()], { cwd: tree, stdio: ['ignore', 'pipe', 'inherit'] });
  const wantsGrpc = args.includes('--grpc-port');
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const http = /listening on http:\/\/[^ ]+:(\d+)/.exec(out);
      const grpc = /listening for gRPC on [^ ]+:(\d+)/.exec(out);
      if (http === null || (wantsGrpc && grpc === null)) return;
      resolve({ child, httpPort: Number(http[1]), ...(grpc === null ? {} : { grpcPort: Number(grpc[1]) }) });
    });
    child.on('exit', (code) => reject(new Error(`microbatch serve exited ${String(code)} before listening (is dist/ built? npm run build): ${out}`)));
  });
}

/**
 * Extra `serve` flags from the `SERVE_ARGS` environment variable (split on whitespace), added to
 * every server a bench starts: to compare a flag's effect run by run (`SERVE_ARGS='--heap-ballast-mb 0'`).
 */
export function extraServeArgs(): string[] {
  return (process.env.SERVE_ARGS ?? '').split(/\s+/).filter((a) => a !== '');
}

/** SIGTERM, then waits for the process to exit. */
export function stopServe(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
