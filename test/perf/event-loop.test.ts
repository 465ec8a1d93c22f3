import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { ModelHost } from '../../src/engine/model-host';
import { createHost } from '../../src/api/create-host';
import { mlpModel, seeded } from '../support/onnx-models';

// onnxruntime-node's session.run() blocks its thread for the whole inference. Inline, the event
// loop stalls for about one model run at a time; with the worker executor it stays free. The test
// asserts relations, not absolute numbers. Its main measure is event-loop utilization (the share of
// wall time the loop was busy): on a 2-core CI machine other jest workers compete with the model's
// worker thread, and CPU starvation inflates delay percentiles even when the loop is idle, but it
// does not make an idle loop look busy.

const SIZES = [256, 1024, 1024, 1024, 16]; // about 30 ms per batch of 512 rows on one thread
const ROWS = 512;
const BATCHES = 4;
let dir: string;
let modelPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mb-loop-'));
  modelPath = join(dir, 'heavy.onnx');
  writeFileSync(modelPath, mlpModel(SIZES));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Measure {
  /** Share of wall time the event loop was busy while the model ran, 0..1. */
  readonly utilization: number;
  /** Median event-loop delay while the model ran, in ms. */
  readonly p50: number;
  /** 99th percentile of the event-loop delay while the model ran, in ms. */
  readonly p99: number;
  /** Median model run time per batch, in ms (as the host saw it). */
  readonly runMs: number;
}

async function measure(host: ModelHost<Float32Array, Float32Array>): Promise<Measure> {
  const xs = Array.from({ length: ROWS * BATCHES }, (_, i) => seeded(SIZES[0]!, i + 1));
  await Promise.all(xs.slice(0, ROWS).map((x) => host.inference(x))); // warm-up batch
  const histogram = monitorEventLoopDelay({ resolution: 2 });
  const started = performance.now();
  const loopBefore = performance.eventLoopUtilization();
  histogram.enable();
  await Promise.all(xs.map((x) => host.inference(x)));
  histogram.disable();
  const loop = performance.eventLoopUtilization(loopBefore);
  const elapsed = performance.now() - started;
  const batches = host.stats.batches - 1;
  return {
    utilization: loop.utilization,
    p50: histogram.percentile(50) / 1e6,
    p99: histogram.percentile(99) / 1e6,
    runMs: elapsed / Math.max(1, batches),
  };
}

test('the worker executor keeps the event loop free while a heavy model runs; inline does not', async () => {
  const session = await InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  const inlineHost = new ModelHost<Float32Array, Float32Array>(
    async (xs) => {
      const features = SIZES[0]!;
      const x = new Float32Array(xs.length * features);
      xs.forEach((row, i) => x.set(row, i * features));
      const y = (await session.run({ X: new Tensor('float32', x, [xs.length, features]) })).Y!.data as Float32Array;
      const width = SIZES.at(-1)!;
      return xs.map((_, i) => y.slice(i * width, (i + 1) * width));
    },
    { maxBatchSize: ROWS },
  );
  const inline = await measure(inlineHost);
  await inlineHost.stop();
  await session.release();

  const workerHost = await createHost<Float32Array, Float32Array>(join(__dirname, '../fixtures/workers/onnx.worker.ts'), {
    intraOpNumThreads: 1,
    workerData: { modelPath },
    maxBatchSize: ROWS,
  });
  let worker: Measure;
  try {
    worker = await measure(workerHost);
  } finally {
    await workerHost.stop();
  }
  // Printed for docs/executors.md; the assertions below are about relations only.
  const show = (m: Measure): string =>
    `busy ${(m.utilization * 100).toFixed(0)}%, delay p50 ${m.p50.toFixed(1)} ms p99 ${m.p99.toFixed(1)} ms, ${m.runMs.toFixed(1)} ms/batch`;
  console.log(`event loop: inline ${show(inline)}; worker ${show(worker)}`);
  // Inline, the loop is busy running the model most of the time, and waits out a model run.
  expect(inline.utilization).toBeGreaterThan(0.8);
  expect(inline.p99).toBeGreaterThan(inline.runMs * 0.5);
  // With the worker, the loop only merges, posts and splits: it is idle most of the time, and a
  // typical tick is not held up by a model run.
  expect(worker.utilization).toBeLessThan(inline.utilization / 2);
  expect(worker.p50).toBeLessThan(inline.p50 / 2);
  // p99 too, bounded loosely enough for CPU starvation on a loaded 2-core machine: under one model
  // run (inline's run time or p99, the larger), which inline's loop waits out every time. Half a run
  // was too tight: it failed once on CI at 23 ms against 16 ms.
  expect(worker.p99).toBeLessThan(Math.max(inline.p99, inline.runMs));
});
