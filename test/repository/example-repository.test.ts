import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from '../http/helpers';
import { waitFor } from '../support/wait-for';
import { connect } from '../grpc/client';

// examples/model-repository, assembled from the npm-shipped PaddleOCR models and served by the
// `microbatch serve <dir>` command as a user runs it.

const ROOT = join(__dirname, '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the example is a plain CommonJS script
const { assembleRepository } = require('../../examples/model-repository/assemble.js') as { assembleRepository(target: string): string };

// Spawning the CLI from the sources (ts-node) and loading three models takes a while on a busy machine.
const SLOW = 180_000;

let dir: string;
beforeAll(() => {
  dir = assembleRepository(mkdtempSync(join(tmpdir(), 'mb-example-repo-')));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts `microbatch serve` with `args` and resolves with its port and a stop() that SIGTERMs it and resolves with the exit code. */
async function serve(args: readonly string[]): Promise<{ port: number; stdout: () => string; stderr: () => string; stop(): Promise<number | null> }> {
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'bin', 'microbatch.js'), 'serve', ...args], { cwd: ROOT, env: { ...process.env, MICROBATCH_CLI_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), SLOW);
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  await waitFor(() => /listening on/.test(stdout) || child.exitCode !== null, SLOW - 30_000, 'serve to listen');
  if (!/listening on/.test(stdout)) throw new Error(`serve exited with ${child.exitCode} before listening:\n${stderr}`);
  const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
  return {
    port,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async () => {
      child.kill('SIGTERM');
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

const image = (width: number) => ({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3, 48, width], data: new Array(3 * 48 * width).fill(0.5) }] });

test('serve <dir>: both example models with their own batching, text-direction in two versions, and the repository index', async () => {
  const s = await serve([dir, '--port', '0', '--threads', '1']);
  try {
    expect(s.stderr()).toMatch(/model repository .* \(none mode\): serving text-direction\/1, text-direction\/2, text-recognition\/1/);
    expect((await call(s.port, 'POST', '/v2/repository/index')).json()).toEqual([
      { name: 'text-direction', version: '1', state: 'READY', reason: '' },
      { name: 'text-direction', version: '2', state: 'READY', reason: '' },
      { name: 'text-recognition', version: '1', state: 'READY', reason: '' },
    ]);
    for (const version of ['1', '2']) {
      const r = await call(s.port, 'POST', `/v2/models/text-direction/versions/${version}/infer`, { body: image(192) });
      expect(r.status).toBe(200);
      expect(r.json()).toMatchObject({ model_name: 'text-direction', model_version: version, outputs: [{ name: 'softmax_0.tmp_0', shape: [1, 2] }] });
    }
    const rec = await call(s.port, 'POST', '/v2/models/text-recognition/infer', { body: image(64) });
    expect(rec.json()).toMatchObject({ model_version: '1', outputs: [{ name: 'softmax_11.tmp_0', shape: [1, 8, 6625] }] });
    const config = (await call(s.port, 'GET', '/v2/models/text-recognition/config')).json();
    expect(config).toMatchObject({
      max_batch_size: 4,
      dynamic_batching: { default_queue_policy: { max_queue_size: 8, default_timeout_microseconds: 10_000_000 } },
      parameters: { policy: { string_value: 'adaptive' }, maxLatencyMs: { string_value: '2000' } },
      version_policy: { latest: { num_versions: 1 } },
    });
    expect((await call(s.port, 'GET', '/v2/models/text-direction/config')).json()).toMatchObject({
      max_batch_size: 16,
      version_policy: { all: {} },
      dynamic_batching: { max_queue_delay_microseconds: 2000, default_queue_policy: { max_queue_size: 64 } },
      instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    });
  } finally {
    expect(await s.stop()).toBe(0);
  }
}, SLOW);

test('serve <dir> --model-control-mode explicit --load-model: only that model at start, the other on request', async () => {
  const s = await serve([dir, '--port', '0', '--threads', '1', '--model-control-mode', 'explicit', '--load-model', 'text-direction']);
  try {
    expect((await call(s.port, 'POST', '/v2/repository/index')).json()).toEqual([
      { name: 'text-direction', version: '1', state: 'READY', reason: '' },
      { name: 'text-direction', version: '2', state: 'READY', reason: '' },
      { name: 'text-recognition' },
    ]);
    expect((await call(s.port, 'POST', '/v2/models/text-recognition/infer', { body: image(64) })).status).toBe(404);
    expect((await call(s.port, 'POST', '/v2/repository/models/text-recognition/load')).status).toBe(200);
    expect((await call(s.port, 'POST', '/v2/models/text-recognition/infer', { body: image(64) })).status).toBe(200);
    expect((await call(s.port, 'POST', '/v2/repository/models/text-direction/unload')).status).toBe(200);
    expect((await call(s.port, 'GET', '/v2/models')).json()).toEqual({ models: [{ name: 'text-recognition', versions: ['1'], state: 'ready' }] });
  } finally {
    expect(await s.stop()).toBe(0);
  }
}, SLOW);

test('serve <dir> --grpc-port: the repository\'s models and versions over gRPC too, and the dashboard on by default', async () => {
  const s = await serve([dir, '--port', '0', '--grpc-port', '0', '--threads', '1']);
  try {
    await waitFor(() => /listening for gRPC/.test(s.stdout()), 30_000, 'the gRPC listening line');
    const grpcPort = Number(/listening for gRPC on 127\.0\.0\.1:(\d+)/.exec(s.stdout())?.[1]);
    const client = connect(grpcPort);
    try {
      const pixels = Buffer.from(new Float32Array(3 * 48 * 192).fill(0.5).buffer);
      for (const version of ['1', '2']) {
        const res = await client.unary('ModelInfer', { model_name: 'text-direction', model_version: version, inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3, 48, 192] }], raw_input_contents: [pixels] });
        expect([res.model_name, res.model_version, res.outputs[0].name, res.outputs[0].shape.map(Number)]).toEqual(['text-direction', version, 'softmax_0.tmp_0', [1, 2]]);
      }
      // The highest version when none is named, as over HTTP.
      expect((await client.unary('ModelMetadata', { name: 'text-direction' })).versions).toEqual(['1', '2']);
    } finally {
      client.close();
    }
    const page = await call(s.port, 'GET', '/dashboard/');
    expect(page.status).toBe(200);
  } finally {
    expect(await s.stop()).toBe(0);
  }
}, SLOW);
