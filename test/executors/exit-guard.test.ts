import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enterBatch, exitFlag, leaveBatch, releaseExitFlag, waitForRunningBatches } from '../../src/executors/worker/exit-guard';

// process.exit() while a worker runs a batch: the exit waits for the batch instead of tearing the
// thread down under it (with onnxruntime-node that teardown aborted the process: exit code 134,
// "terminate called after throwing an instance of 'Napi::Error'"). The programs run the compiled
// package (dist/, built by jest's global setup) in a child process, as a user's program would.

const ROOT = join(__dirname, '../..');
const PROGRAM = join(ROOT, 'test/fixtures/workers/exit-mid-batch.js');

function runNode(args: string[], timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PROGRAM, ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

test('process.exit() while a worker runs a batch: the batch function returns first, and the exit code is the one asked for', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'microbatch-exit-'));
  try {
    const { code, signal, stderr } = await runNode(['js', dir], 30_000);
    expect({ code, signal, stderr }).toEqual({ code: 3, signal: null, stderr: '' });
    expect(existsSync(join(dir, 'started'))).toBe(true);
    // Without the guard the thread was terminated mid-batch: `finished` was never written.
    expect(existsSync(join(dir, 'finished'))).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 40_000);

test('process.exit() while the ONNX classifier runs a batch in a worker: exit code 3, not an abort in onnxruntime-node', async () => {
  const { code, signal, stderr } = await runNode(['onnx'], 30_000);
  expect(stderr).not.toContain('terminate called');
  expect({ code, signal }).toEqual({ code: 3, signal: null });
}, 40_000);

describe('the shared flag', () => {
  test('a batch starts while the process is not exiting, and not once it is', () => {
    const flag = exitFlag();
    try {
      expect(enterBatch(flag)).toBe(true);
      expect(Atomics.load(flag, 0)).toBe(1);
      leaveBatch(flag);
      expect(Atomics.load(flag, 0)).toBe(0);
      waitForRunningBatches(); // nothing running: returns at once, and raises the exiting flag
      expect(enterBatch(flag)).toBe(false);
      expect(Atomics.load(flag, 0)).toBe(0); // a refused batch leaves nothing marked running
    } finally {
      releaseExitFlag(flag);
    }
  });

  test('a worker started without a flag always runs its batches', () => {
    expect(enterBatch(undefined)).toBe(true);
    expect(() => leaveBatch(undefined)).not.toThrow();
  });
});
