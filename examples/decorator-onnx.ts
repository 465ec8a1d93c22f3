/**
 * The decorator style with onnxruntime-node: a model class whose `predictBatch` is decorated with
 * `@batching`, whose InferenceSession is loaded asynchronously by a context provider and injected
 * with `@inject(OnnxSession)`, hosted by `createHost`. Run: `npx ts-node examples/decorator-onnx.ts`.
 */
import 'reflect-metadata'; // first: tsyringe and @batching need the Reflect polyfill
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { inject, injectable } from 'tsyringe';
import { batching, createHost, OnnxSession } from 'microbatch';
import { linearModel, linearReference } from './support/models';

const FEATURES = 4;
const OUTPUTS = 3;

@injectable()
class LinearScorer {
  constructor(@inject(OnnxSession) private readonly session: InferenceSession) {}

  /** One session.run for the whole batch: rows are stacked into one [N, 4] tensor, outputs sliced back. */
  @batching({ maxBatchSize: 16 })
  async predictBatch(rows: readonly Float32Array[]): Promise<Float32Array[]> {
    const x = new Float32Array(rows.length * FEATURES);
    rows.forEach((row, i) => x.set(row, i * FEATURES));
    const { Y } = await this.session.run({ X: new Tensor('float32', x, [rows.length, FEATURES]) });
    const y = (Y as Tensor).data as Float32Array;
    return rows.map((_, i) => y.slice(i * OUTPUTS, (i + 1) * OUTPUTS));
  }
}

async function main(): Promise<void> {
  let session: InferenceSession | undefined;
  const host = await createHost(LinearScorer, {
    // An async provider: awaited once, before LinearScorer is built; released by host.stop().
    context: { [OnnxSession]: async () => (session = await InferenceSession.create(linearModel(FEATURES, OUTPUTS))) },
    maxBatchSize: 32, // deployment override: beats the decorator's 16
  });

  const rows = Array.from({ length: 100 }, (_, i) => Float32Array.from({ length: FEATURES }, (_, j) => Math.sin(i + j)));
  const outputs = await Promise.all(rows.map((row) => host.inference(row))); // typed Promise<Float32Array>

  let worst = 0;
  outputs.forEach((y, i) => linearReference(rows[i]!).forEach((v, j) => (worst = Math.max(worst, Math.abs(v - y[j]!)))));
  for (const i of [0, 1, 99]) console.log(`row ${i}: [${Array.from(outputs[i]!, (v) => v.toFixed(4)).join(', ')}]`);
  const { batches, requests, meanBatchSize } = host.stats;
  console.log(`${requests} requests in ${batches} model calls (mean batch size ${meanBatchSize.toFixed(1)}), max error vs JS reference ${worst.toExponential(1)}`);

  await host.stop(); // drains, then releases the session
  const released = await session!.run({ X: new Tensor('float32', rows[0]!, [1, FEATURES]) }).then(() => false, () => true);
  console.log(`session released by stop(): ${released}`);
  if (worst > 1e-4 || batches >= requests || !released) process.exitCode = 1;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
