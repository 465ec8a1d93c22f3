/**
 * Reproduces the thread-settings table of docs/onnx.md ("Threads"): the PaddleOCR classifier
 * inline, 256 closed-loop clients, batches of 32, three 2.5 s runs in one process, with the
 * session options given as JSON in ORT_OPTS (onnxruntime's own defaults when unset; this script
 * calls InferenceSession.create directly, not loadSession). The collapses it shows last for a
 * whole process, so run it in several fresh processes per setting:
 *
 *   for i in 1 2 3 4; do ORT_OPTS='{"intraOpNumThreads":2,"extra":{"session":{"intra_op":{"allow_spinning":"0"}}}}' \
 *     npx ts-node --transpile-only bench/ort-threads.ts; done
 *
 * Not part of `npm run bench`: it answers one question about onnxruntime, not about microbatch.
 */
import * as ort from 'onnxruntime-node';
import { ModelHost } from '../src/engine/model-host';
import { closedLoop } from './harness';
import { CLS_PATH, concatBatchFn, type BenchModel } from './models';
(async () => {
  const opts = JSON.parse(process.env.ORT_OPTS ?? '{}');
  const session = await ort.InferenceSession.create(CLS_PATH, opts);
  const items = Array.from({ length: 64 }, (_, k) => Float32Array.from({ length: 3 * 48 * 192 }, (_, i) => Math.sin(i + k)));
  const m: BenchModel = { key: 'cls', name: 'cls', session, inputName: session.inputNames[0]!, outputName: session.outputNames[0]!, itemShape: [3, 48, 192], itemSize: 3 * 48 * 192, outSize: 2, maxBatchSize: 32, items };
  const out: number[] = [];
  for (let r = 0; r < 3; r++) {
    const host = new ModelHost(concatBatchFn(m), { maxBatchSize: 32 });
    const res = await closedLoop({ clients: 256, durationMs: 2500, call: (i) => host.inference(items[i % 64]!) });
    await host.stop();
    out.push(Math.round(res.throughput));
  }
  console.log(out.join(' '));
})();
