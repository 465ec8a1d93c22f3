import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVE_HELP } from '../../src/cli/serve';
import { linearModel, linearReference } from '../support/onnx-models';
import { call } from '../http/helpers';
import { waitFor } from '../support/wait-for';
import { connect, f32Bytes, f32Values, grpc } from './client';

// `microbatch serve --grpc-port`, spawned as a user runs it: one model served over HTTP and gRPC
// from one core; SIGTERM drains both and exits 0.

const ROOT = join(__dirname, '..', '..');
let dir: string;
let modelPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-grpc-cli-'));
  modelPath = join(dir, 'linear.onnx');
  writeFileSync(modelPath, linearModel(4, 3));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('serve --help lists --grpc-port', () => {
  expect(SERVE_HELP).toMatch(/^ {2}--grpc-port N {9}also serve the Open Inference Protocol over gRPC on this port$/m);
});

test('serve --grpc-port: the model over gRPC and HTTP alike; SIGTERM drains both and exits 0', async () => {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'microbatch.js'), 'serve', modelPath, '--port', '0', '--grpc-port', '0', '--name', 'lin', '--workers', '0', '--threads', '1'], {
    cwd: ROOT,
    env: { ...process.env, MICROBATCH_CLI_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    await waitFor(() => /listening for gRPC/.test(stdout) || child.exitCode !== null, 30_000, `serve to listen (stderr: ${stderr})`);
    const httpPort = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
    const grpcPort = Number(/listening for gRPC on 127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
    expect(stdout).toContain('(inference.GRPCInferenceService/ModelInfer, model_name "lin")');
    const client = connect(grpcPort);
    try {
      const row = [0.5, -1, 2, 3];
      const res = await client.unary('ModelInfer', { model_name: 'lin', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4] }], raw_input_contents: [f32Bytes(row)] });
      expect([res.model_name, res.model_version]).toEqual(['lin', '1']);
      f32Values(res.raw_output_contents[0]).forEach((v, j) => expect(v).toBeCloseTo(linearReference(row)[j] as number, 5));
      expect((await call(httpPort, 'GET', '/v2/models/lin/stats')).json().model_stats[0].inference_count).toBe(1); // one core's statistics

      // Calls of both transports in flight when SIGTERM comes: each is answered, or refused as the drain began.
      const viaGrpc = Array.from({ length: 20 }, () =>
        client.unary('ModelInfer', { model_name: 'lin', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 4] }], raw_input_contents: [f32Bytes(row)] }).then(
          () => 'ok',
          (e: { code: number }) => String(grpc.status[e.code]),
        ),
      );
      const viaHttp = Array.from({ length: 20 }, () => call(httpPort, 'POST', '/v2/models/lin/infer', { body: { inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: row }] } }).then((r) => (r.status === 200 ? 'ok' : String(r.status)), () => 'connection closed'));
      child.kill('SIGTERM');
      const outcomes = new Set([...(await Promise.all(viaGrpc)), ...(await Promise.all(viaHttp))]);
      expect([...outcomes].filter((o) => !['ok', 'UNAVAILABLE', '503', 'connection closed'].includes(o))).toEqual([]);
      expect(await exited).toBe(0);
      expect(stderr).toContain('SIGTERM received, draining');
      expect(stderr).toContain('drained, exiting');
    } finally {
      client.close();
    }
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
  }
}, 90_000);
