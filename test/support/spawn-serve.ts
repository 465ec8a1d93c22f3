import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './wait-for';

const LISTENING = /listening on http:\/\/127\.0\.0\.1:(\d+)/;

/**
 * A spawned `microbatch serve ...args --port 0` (from the sources, as a user runs the command), once
 * it listens: its HTTP port, what it printed so far, and stop(), which sends SIGTERM and resolves
 * with the exit code.
 */
export async function spawnServe(args: readonly string[], listenWithinMs = 60_000): Promise<{ port: number; stdout(): string; stderr(): string; stop(): Promise<number | null> }> {
  const root = join(__dirname, '..', '..');
  const child = spawn(process.execPath, [join(root, 'bin', 'microbatch.js'), 'serve', ...args, '--port', '0'], { cwd: root, env: { ...process.env, MICROBATCH_CLI_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (c: Buffer) => (output.stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output.stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await waitFor(() => LISTENING.test(output.stdout) || child.exitCode !== null, listenWithinMs, 'microbatch serve to listen');
  const port = Number(LISTENING.exec(output.stdout)?.[1]);
  if (!(port > 0)) throw new Error(`microbatch serve exited with ${child.exitCode} before listening:\n${output.stderr}`);
  return {
    port,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
