/**
 * microbatch inside a Fastify app: `fastifyPlugin` registers the inference routes (`/v2/...`,
 * Open Inference Protocol) in their own scope, where the server reads the body itself; the app's
 * other routes keep Fastify's parsing.
 *
 * Run: npx ts-node examples/http-fastify.ts   (starts, calls itself, prints, exits)
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { ModelHost } from 'microbatch';
import { createInferenceServer, fastifyPlugin, type ServableModel } from 'microbatch/http';
import type { TensorLike } from 'microbatch';

type Feeds = Record<string, TensorLike>;

// A toy model, Y = X + 1 over rows of two floats, batched by a ModelHost.
const adder = new ModelHost(
  async (items: readonly Feeds[]) => items.map((f) => ({ Y: { type: 'float32', data: Float32Array.from(f.X!.data as Float32Array, (v) => v + 1), dims: f.X!.dims } })),
  { maxBatchSize: 32, name: 'adder' },
);
const model: ServableModel = {
  model: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }] },
  options: { maxBatchSize: 32 },
  inference: (feeds, options) => adder.inference(feeds, options),
  stop: (options) => adder.stop(options),
};

async function main(): Promise<void> {
  const inference = createInferenceServer({ models: { adder: model }, log: { level: 'warn' } });
  const app = Fastify();
  await app.register(fastifyPlugin(inference));
  app.addHook('onClose', () => inference.close()); // app.close() drains the inference requests too
  app.get('/', async () => 'the rest of my app');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const meta = (await (await fetch(`${base}/v2/models/adder`)).json()) as { platform: string; inputs: unknown[] };
  const res = await fetch(`${base}/v2/models/adder/infer`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ inputs: [{ name: 'X', shape: [2, 2], datatype: 'FP32', data: [1, 2, 3, 4] }] }),
  });
  const answer = (await res.json()) as { outputs: Array<{ data: number[] }> };
  console.log(`model adder (${meta.inputs.length} input): [1,2,3,4] → ${JSON.stringify(answer.outputs[0]!.data)}`);
  console.log(`GET / → ${await (await fetch(`${base}/`)).text()}`);
  await app.close();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
