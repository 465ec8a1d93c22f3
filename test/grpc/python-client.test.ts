import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { createOnnxHost } from '../../src/onnx';
import { createGrpcServer, INFERENCE_PROTO, type GrpcServer } from '../../src/grpc';
import { linearReference } from '../support/onnx-models';
import { modelFiles } from '../http/helpers';

// A client nobody here wrote: Debian's python3-grpcio, with stubs that python3-grpc-tools
// generates from the shipped .proto, sends raw FP32 contents as Triton's Python client does.
// Without Python's grpc this test is left out locally, but under CI (CI=true) it must run, so it fails.

const PYTHON = '/usr/bin/python3';

function pythonHasGrpc(): boolean {
  try {
    execFileSync(PYTHON, ['-c', 'import grpc, grpc_tools'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const available = pythonHasGrpc();
const run = available || process.env.CI === 'true' ? test : test.skip;

let files: ReturnType<typeof modelFiles>;
let server: GrpcServer;
let stubs: string;

beforeAll(async () => {
  files = modelFiles();
  stubs = mkdtempSync(join(tmpdir(), 'mb-grpc-py-'));
});
afterAll(async () => {
  await server?.close();
  files.cleanup();
  rmSync(stubs, { recursive: true, force: true });
});

run('Python grpcio with stubs generated from proto/inference.proto: ModelInfer with raw contents', async () => {
  expect(available).toBe(true); // under CI: install python3-grpcio and python3-grpc-tools (.ci/run does)
  execFileSync(PYTHON, ['-m', 'grpc_tools.protoc', `-I${dirname(INFERENCE_PROTO)}`, `--python_out=${stubs}`, `--grpc_python_out=${stubs}`, INFERENCE_PROTO]);
  const linear = await createOnnxHost(files.linear, { maxBatchSize: 8, session: { intraOpNumThreads: 1 } });
  server = createGrpcServer({ models: { linear } });
  const { port } = await server.listen(0);
  const { stdout } = await promisify(execFile)(PYTHON, [join(__dirname, 'fixtures', 'python_client.py'), stubs, String(port)], { timeout: 60_000 });
  const got = JSON.parse(stdout) as { live: boolean; inputs: unknown; id: string; model_version: string; outputs: unknown; Y: number[]; error: string[] };
  expect({ ...got, Y: undefined }).toEqual({
    live: true,
    inputs: [['X', 'FP32', [-1, 4]]],
    id: 'py-1',
    model_version: '1',
    outputs: [['Y', 'FP32', [2, 3]]],
    Y: undefined,
    error: ['NOT_FOUND', 'no model named "nope"; the served models are "linear"'],
  });
  const want = [...linearReference([0.5, -1, 2, 3]), ...linearReference([1, 1, 1, 1])];
  got.Y.forEach((v, i) => expect(v).toBeCloseTo(want[i] as number, 5));
}, 120_000);
