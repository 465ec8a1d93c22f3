/**
 * DictBatcher with a batcher per key: a dict-of-tensor text model whose token ids and attention
 * mask vary in length per request are padded by a PadBatcher each, while a temperature scalar is
 * shared by the sub-batch. Run: npx ts-node examples/batcher-dict-pad.ts
 */
import { DictBatcher, ModelHost, PadBatcher, TensorInputError, type TensorLike } from 'microbatch';

type Feeds = Record<string, TensorLike>;

// A stand-in for the model: the mean of the token ids where the mask is 1, over the temperature → [N].
async function meanScore(feeds: Feeds): Promise<Feeds> {
  const ids = feeds.input_ids!.data as BigInt64Array;
  const mask = feeds.attention_mask!.data as BigInt64Array;
  const temperature = (feeds.temperature!.data as Float32Array)[0]!;
  const [n, l] = feeds.input_ids!.dims as [number, number];
  const score = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    let count = 0;
    for (let j = 0; j < l; j++) {
      if (mask[i * l + j] === 1n) {
        sum += Number(ids[i * l + j]);
        count++;
      }
    }
    score[i] = sum / count / temperature;
  }
  console.log(`  model call: input_ids [${n}, ${l}], temperature ${temperature}`);
  return { score: { type: 'float32', data: score, dims: [n] } };
}

const request = (ids: number[], temperature = 1): Feeds => ({
  input_ids: { type: 'int64', data: BigInt64Array.from(ids.map(BigInt)), dims: [1, ids.length] },
  attention_mask: { type: 'int64', data: BigInt64Array.from(ids.map(() => 1n)), dims: [1, ids.length] },
  temperature: { type: 'float32', data: Float32Array.from([temperature]), dims: [] },
});

async function main(): Promise<void> {
  const batcher = new DictBatcher<Feeds, Feeds>({
    inputs: {
      input_ids: new PadBatcher({ padAxis: 1, padValue: 0 }),
      attention_mask: new PadBatcher({ padAxis: 1, padValue: 0 }),
      temperature: 'shared',
    },
    outputs: { score: 0 },
  });
  const host = new ModelHost(meanScore, {
    maxBatchSize: 8,
    batcher,
    observer: { onBatch: (b) => console.log(`  ${b.requests} requests in ${b.modelCalls} model calls, padding waste ${(b.paddingWaste * 100).toFixed(0)}%`) },
  });
  const requests = [request([4, 8, 6]), request([10]), request([1, 2, 3, 4, 5]), request([3, 3], 0.5)];
  const bad = { ...request([1, 2]), input_ids: { type: 'int64', data: BigInt64Array.from([1n, 2n]), dims: [2] } };
  const results = await Promise.allSettled([...requests.map((r) => host.inference(r)), host.inference(bad)]);
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') console.log(`  request ${i} → score ${(r.value.score!.data as Float32Array)[0]}`);
    else console.log(`  request ${i} refused alone (${r.reason instanceof TensorInputError ? 'TensorInputError' : 'Error'}): ${(r.reason as Error).message}`);
  });
  await host.stop();
  const scores = results.slice(0, 4).map((r) => (r.status === 'fulfilled' ? (r.value.score!.data as Float32Array)[0] : NaN));
  if (scores.join() !== '6,10,3,6' || results[4]!.status !== 'rejected') throw new Error(`unexpected results: ${scores.join()}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
