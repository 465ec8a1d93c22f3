/**
 * PadBatcher and BucketBatcher: token sequences of different lengths padded into one [N, L]
 * batch with an attention mask, and each caller's output trimmed back to its own length.
 * Run: npx ts-node examples/batcher-pad.ts
 */
import { BucketBatcher, ModelHost, PadBatcher, type TensorLike } from 'microbatch';

type Feeds = Record<string, TensorLike>;

// A stand-in for a sequence model: running sum of the token ids where the mask is 1 → [N, L].
async function cumsum(feeds: Feeds): Promise<TensorLike> {
  const ids = feeds.input_ids!;
  const mask = feeds.attention_mask!.data as BigInt64Array;
  const [n, l] = ids.dims as [number, number];
  const data = ids.data as BigInt64Array;
  const out = new Float32Array(n * l);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < l; j++) {
      if (mask[i * l + j] === 1n) s += Number(data[i * l + j]);
      out[i * l + j] = s;
    }
  }
  console.log(`  model call: input_ids [${ids.dims.join(', ')}]`);
  return { type: 'float32', data: out, dims: [n, l] };
}

const tokens = (...ids: number[]): TensorLike => ({ type: 'int64', data: BigInt64Array.from(ids.map(BigInt)), dims: [1, ids.length] });
const requests = [tokens(5, 6, 7), tokens(1), tokens(2, 2), tokens(...Array.from({ length: 12 }, (_, i) => i))];

async function run(name: string, batcher: PadBatcher<TensorLike, TensorLike, Feeds>): Promise<void> {
  console.log(name);
  const host = new ModelHost(cumsum, {
    maxBatchSize: 8,
    batcher,
    observer: { onBatch: (b) => console.log(`  ${b.requests} requests, padding waste ${(b.paddingWaste * 100).toFixed(0)}%`) },
  });
  const outs = await Promise.all(requests.map((t) => host.inference(t)));
  outs.forEach((o, i) => console.log(`  request ${i} (length ${requests[i]!.dims[1]}) →`, Array.from(o.data as Float32Array).join(' ')));
  await host.stop();
}

async function main(): Promise<void> {
  const options = { padAxis: 1, key: 'input_ids', maskKey: 'attention_mask', unpadAxis: 1 } as const;
  await run('PadBatcher: one batch padded to the longest request', new PadBatcher<TensorLike, TensorLike, Feeds>(options));
  await run('BucketBatcher: short and long requests in separate sub-batches', new BucketBatcher<TensorLike, TensorLike, Feeds>({ ...options, buckets: [4, 16] }));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
