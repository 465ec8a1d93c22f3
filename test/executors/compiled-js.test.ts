import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

// The worker executor as a user of the published package meets it: compiled JS from dist/, plain
// `node`, no ts-node anywhere (every other worker test runs the TypeScript sources through it).
// The program also has to end by itself after stop(), with no worker thread left: the production
// form of jest's --detectOpenHandles.

const ROOT = join(__dirname, '../..');
const PROGRAM = join(ROOT, 'test/fixtures/workers/compiled-host.js');

interface Report {
  readonly mainThread: number;
  readonly mainTs: boolean;
  readonly doubled: ReadonlyArray<{ y: number; thread: number; ts: boolean; batch: number }>;
  readonly squared: readonly number[];
  readonly threadsBefore: number | undefined;
  readonly threadsRunning: number | undefined;
  readonly threadsAfter: number | undefined;
}

function runNode(file: string, timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // A leaked handle keeps the program alive: kill it and let the exit signal fail the test.
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

test('compiled JS without ts-node: createHost finds the class in workers, createHost(module) loads a .js factory, and the process exits by itself after stop()', async () => {
  // dist/ is built by jest's global setup (scripts/build-if-stale.js) when missing or stale.
  if (!existsSync(join(ROOT, 'dist/index.js'))) throw new Error('dist/ is missing although the global setup builds it: run `npm run build` to see why');
  const { code, signal, stdout, stderr } = await runNode(PROGRAM, 15_000);
  expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
  const report = JSON.parse(stdout.trim()) as Report;
  expect(report.mainTs).toBe(false);
  expect(report.doubled.map((d) => d.y)).toEqual([2, 4, 6, 8, 10, 12]);
  for (const d of report.doubled) {
    expect(d.thread).not.toBe(report.mainThread);
    expect(d.ts).toBe(false); // the workers loaded worker-main.js and the class module as plain JS
  }
  expect(Math.max(...report.doubled.map((d) => d.batch))).toBeGreaterThan(1);
  expect(report.squared).toEqual([1, 4, 9]);
  if (process.platform === 'linux') {
    // Three worker threads while serving (2 for the class, 1 for the factory), none after stop().
    expect(report.threadsRunning).toBeGreaterThanOrEqual(report.threadsBefore! + 3);
    expect(report.threadsAfter).toBe(report.threadsBefore);
  }
}, 30_000);
