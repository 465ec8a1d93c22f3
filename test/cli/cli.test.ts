import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linearModel, linearReference, varLengthModel } from '../support/onnx-models';
import { call } from '../http/helpers';
import { waitFor } from '../support/wait-for';

// The `microbatch` command, spawned as a user would run it (`node bin/microbatch.js ...`), from the
// sources (MICROBATCH_CLI_SOURCE=1), end to end over loopback.

const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'microbatch.js');
let dir: string;
let modelPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-cli-'));
  modelPath = join(dir, 'linear.onnx');
  writeFileSync(modelPath, linearModel(4, 3));
  writeFileSync(join(dir, 'var-length.onnx'), varLengthModel());
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function start(args: readonly string[]): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, MICROBATCH_CLI_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs the CLI to its end (killed after 30 s) and collects its output. */
function runCli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = start(args);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('serve: answers an inference over HTTP, exposes /metrics, logs JSON lines, and exits 0 on SIGTERM after draining', async () => {
  const child = start(['serve', modelPath, '--port', '0', '--name', 'lin', '--max-batch-size', '8', '--workers', '1', '--threads', '1', '--log-level', 'debug', '--log-format', 'json', '--cors-origin', 'https://a.example,https://b.example:8443', '--cors-origin', 'http://localhost:5173']);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.on('data', (c: Buffer) => {
        stdout += c.toString();
        const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
        if (m !== null) resolve(Number(m[1]));
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code} before listening:\n${stderr}`)));
    });
    expect(stdout).toContain('(POST /v2/models/lin/infer)');
    const row = [0.5, -1, 2, 3];
    const r = await call(port, 'POST', '/v2/models/lin/infer', { body: { inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: row }] } });
    expect(r.status).toBe(200);
    const y: number[] = r.json().outputs[0].data;
    linearReference(row).forEach((v, j) => expect(y[j]).toBeCloseTo(v, 5));
    expect((await call(port, 'GET', '/v2/health/ready')).status).toBe(200);
    const metrics = await call(port, 'GET', '/metrics');
    expect(metrics.text).toMatch(/^microbatch_requests_total\{host="lin",outcome="ok"\} 1$/m);
    // The process's default metrics ride along with the model's.
    expect(metrics.text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(metrics.text).toMatch(/^process_resident_memory_bytes /m);
    expect(metrics.text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    // The heap ballast (--heap-ballast-mb, 32 MiB by default) sits in V8's large-object space.
    const largeObjects = Number(/^nodejs_heap_space_size_used_bytes\{space="large_object"\} (\d+)$/m.exec(metrics.text)?.[1]);
    expect(largeObjects).toBeGreaterThanOrEqual(32 * 1024 * 1024);
    // What `promtool check metrics` requires of names: a counter ends in _total, nothing else does.
    const types = [...metrics.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, n, t]) => ({ name: n!, type: t! }));
    expect(types.length).toBeGreaterThan(10);
    expect(types.filter((m) => (m.type === 'counter') !== m.name.endsWith('_total'))).toEqual([]);
    // --cors-origin, repeated and comma-separated: each origin's preflight is answered.
    for (const origin of ['https://a.example', 'https://b.example:8443', 'http://localhost:5173']) {
      const pre = await call(port, 'OPTIONS', '/v2/models/lin/infer', { headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' } });
      expect([pre.status, pre.headers['access-control-allow-origin']]).toEqual([204, origin]);
    }
    const other = await call(port, 'OPTIONS', '/v2/models/lin/infer', { headers: { Origin: 'https://c.example', 'Access-Control-Request-Method': 'POST' } });
    expect([other.status, other.headers['access-control-allow-origin']]).toEqual([204, undefined]);
    expect((await call(port, 'GET', '/v2/nope')).status).toBe(404);
    // The log line travels through the child's stderr pipe, which can arrive after the answer did.
    const logged = (): unknown[] => stderr.split('\n').filter((l) => l.startsWith('{') && l.endsWith('}')).map((l) => JSON.parse(l) as unknown);
    await waitFor(() => logged().some((l) => (l as { path?: unknown }).path === '/v2/nope'), 10_000, 'the 404 log line');
    expect(logged()).toContainEqual(expect.objectContaining({ level: 'debug', status: 404, code: 'not_found', method: 'GET', path: '/v2/nope' }));

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toContain('SIGTERM received, draining');
    expect(stderr).toContain('drained, exiting');
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
  }
});

test('serve --watch: a new model file is loaded beside the serving one and takes over; a broken file is logged and the current version keeps serving', async () => {
  const watched = mkdtempSync(join(tmpdir(), 'mb-watch-'));
  const file = join(watched, 'lin.onnx');
  writeFileSync(file, linearModel(4, 3, 1));
  const child = start(['serve', file, '--port', '0', '--workers', '1', '--threads', '1', '--watch', '--warmup', '--max-batch-size', '4']);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    await waitFor(() => /listening on/.test(stdout) || child.exitCode !== null, 20_000, 'serve to listen');
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
    expect(stderr).toContain('watching the file for new versions');
    const row = [0.5, -1, 2, 3];
    const infer = async () => {
      const r = await call(port, 'POST', '/v2/models/lin/infer', { body: { inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: row }] } });
      return r.json() as { model_version: string; outputs: Array<{ data: number[] }> };
    };
    const near = (y: number[], seed: number) => linearReference(row, 4, 3, seed).every((v, j) => Math.abs(v - (y[j] as number)) < 1e-4);
    // --warmup: batches of 1, 2 and 4 rows ran before the server listened, and run again before a reload takes over.
    const warmups = async (): Promise<number> => Number(/^microbatch_batches_total\{host="lin",reason="warmup"\} (\d+)$/m.exec((await call(port, 'GET', '/metrics')).text)?.[1] ?? 0);
    expect(await warmups()).toBe(3);
    const first = await infer();
    expect({ version: first.model_version, v1: near(first.outputs[0]!.data, 1) }).toEqual({ version: '1', v1: true });

    writeFileSync(file, linearModel(4, 3, 2));
    await waitFor(() => stderr.includes('"lin" now serves version 2'), 20_000, 'the reload');
    const second = await infer();
    expect({ version: second.model_version, v2: near(second.outputs[0]!.data, 2) }).toEqual({ version: '2', v2: true });
    expect(await warmups()).toBe(6);

    writeFileSync(file, Buffer.from('not a model'));
    await waitFor(() => stderr.includes('reload of "lin" failed, version 2 keeps serving'), 20_000, 'the failed reload');
    const third = await infer();
    expect({ version: third.model_version, v2: near(third.outputs[0]!.data, 2) }).toEqual({ version: '2', v2: true });

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
    rmSync(watched, { recursive: true, force: true });
  }
});

test('bench: prints a table per batch size and a recommendation', async () => {
  const { code, stdout, stderr } = await runCli(['bench', modelPath, '--seconds', '0.5', '--max-batch-size', '8', '--threads', '1']);
  expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
  const lines = stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^batch\s+runs\s+median ms\s+ms\/item\s+items\/s\s+vs batch 1$/);
  expect(lines.slice(1, 5).map((l) => Number(l.trim().split(/\s+/)[0]))).toEqual([1, 2, 4, 8]);
  // Then each candidate's predicted latency at 30/70/95% load, and the one recommended.
  expect(stdout).toMatch(/\npredicted latency \(simulated host, measured run times, Poisson arrivals\):\nsetting +30%: p50 \/ p99 ms +70%: p50 \/ p99 ms +95%: p50 \/ p99 ms\nmaxDelayMs 0 /);
  expect(stdout).toMatch(/recommended: maxBatchSize (1|2|4|8), (maxDelayMs \d+(\.\d+)?|policy 'adaptive')\n/);
  // Progress goes to stderr, one line per batch size when not on a terminal.
  expect(stderr.match(/^ {2}batch +\d+ +\[\d\/4\]/gm)).toHaveLength(4);
}, 60_000); // the recommendation simulates 18 settings × loads: seconds on a busy machine

test('bench: refuses to guess symbolic dims, and measures with --dim', async () => {
  const varLength = join(dir, 'var-length.onnx');
  const [refused, measured] = await Promise.all([
    runCli(['bench', varLength, '--seconds', '0.2', '--max-batch-size', '2', '--threads', '1']),
    runCli(['bench', varLength, '--seconds', '0.2', '--max-batch-size', '2', '--threads', '1', '--dim', 'L=16']),
  ]);
  expect(refused).toMatchObject({ code: 2, stdout: '' });
  expect(refused.stderr).toContain("microbatch bench: the model's inputs have symbolic dims L that bench cannot guess (X [N, L]); give each a realistic size: --dim L=SIZE");
  expect(measured.code).toBe(0);
  expect(measured.stdout).toMatch(/^recommended: maxBatchSize [12], (maxDelayMs|policy) /m);
}, 60_000);

test('--help, --version, and usage errors (exit 2, with a message)', async () => {
  const runs: string[][] = [
    ['--help'],
    ['serve', '--help'],
    ['bench', '-h'],
    ['--version'],
    ['serve', modelPath, '--prot', '8080'],
    ['serve', modelPath, '--max-batch-size', '0'],
    ['bench'],
    ['deploy', modelPath],
    ['serve', join(dir, 'nope.onnx')],
    ['serve', modelPath, '--log-level', 'loud'],
    ['serve', modelPath, '--log-format', 'xml'],
  ];
  // Four ts-node processes at a time: eleven at once on a busy 2-core machine ran past the 30 s each may take.
  const results: Array<Awaited<ReturnType<typeof runCli>>> = [];
  for (let i = 0; i < runs.length; i += 4) results.push(...(await Promise.all(runs.slice(i, i + 4).map((args) => runCli(args)))));
  const [main, serveHelp, benchHelp, version, unknownFlag, badValue, missing, unknownCommand, noFile, badLevel, badFormat] = results;
  expect(main).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: microbatch <command>.*serve <model\.onnx>.*bench <model\.onnx>/s) });
  expect(serveHelp).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: microbatch serve <model\.onnx>.*--max-batch-size N.*--workers N/s) });
  expect(benchHelp).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: microbatch bench <model\.onnx>.*--seconds S/s) });
  expect(version).toMatchObject({ code: 0, stdout: `${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}\n` });
  expect(unknownFlag).toMatchObject({ code: 2, stderr: expect.stringContaining("microbatch serve: Unknown option '--prot'") });
  expect(badValue).toMatchObject({ code: 2, stderr: expect.stringContaining('microbatch serve: --max-batch-size must be an integer from 1 up, got "0"') });
  expect(missing).toMatchObject({ code: 2, stderr: expect.stringContaining('microbatch bench: missing model path') });
  expect(unknownCommand).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown command "deploy"') });
  expect(noFile).toMatchObject({ code: 2, stderr: expect.stringContaining('no such model file') });
  expect(badLevel).toMatchObject({ code: 2, stderr: expect.stringContaining('microbatch serve: --log-level must be one of debug, info, warn, error, silent, got "loud"') });
  expect(badFormat).toMatchObject({ code: 2, stderr: expect.stringContaining('microbatch serve: --log-format must be text or json, got "xml"') });
}, 180_000);
