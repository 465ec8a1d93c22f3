/**
 * microbatch inside an Express app: `expressMiddleware` answers the inference routes
 * (`/v2/...`, Open Inference Protocol) and hands every other request to the app. Mount it before
 * any body parser; it reads and bounds the body itself.
 *
 * Run: npx ts-node examples/http-express.ts   (starts, calls itself, prints, exits)
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { ModelHost } from 'microbatch';
import { createInferenceServer, expressMiddleware, type ServableModel } from 'microbatch/http';
import type { TensorLike } from 'microbatch';

type Feeds = Record<string, TensorLike>;

// A toy model, Y = 2·X over rows of two floats, batched by a ModelHost.
const doubler = new ModelHost(
  async (items: readonly Feeds[]) => items.map((f) => ({ Y: { type: 'float32', data: Float32Array.from(f.X!.data as Float32Array, (v) => v * 2), dims: f.X!.dims } })),
  { maxBatchSize: 32, name: 'doubler' },
);
const model: ServableModel = {
  model: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }] },
  options: { maxBatchSize: 32 },
  inference: (feeds, options) => doubler.inference(feeds, options),
  stop: (options) => doubler.stop(options),
};

async function main(): Promise<void> {
  const inference = createInferenceServer({ models: { doubler: model }, log: { level: 'warn' } });
  const app = express();
  app.use(expressMiddleware(inference)); // before express.json(): it reads the body itself
  app.get('/', (_req, res) => void res.send('the rest of my app'));
  const http = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => http.once('listening', resolve));
  const { port } = http.address() as AddressInfo;

  const replies = await Promise.all(
    [1, 2, 3].map(async (i) => {
      const res = await fetch(`http://127.0.0.1:${port}/v2/models/doubler/infer`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'X', shape: [1, 2], datatype: 'FP32', data: [i, -i] }] }),
      });
      return ((await res.json()) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data;
    }),
  );
  console.log(`3 concurrent requests → ${JSON.stringify(replies)}`);
  console.log(`GET / → ${await (await fetch(`http://127.0.0.1:${port}/`)).text()}`);

  await inference.close(); // drains in-flight requests and stops the model
  await new Promise((resolve) => http.close(resolve));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
