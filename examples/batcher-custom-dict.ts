/**
 * A custom Batcher for dict-of-tensor requests, written from scratch against the Batcher contract,
 * then the same job done by the built-in DictBatcher. Run: npx ts-node examples/batcher-custom-dict.ts
 *
 * Each request is `{ features: float32 [1, F], scale: float32 [] }`: a row of features and a
 * per-request scalar. The model wants `features [N, F]` and `scale [N]`.
 */
import { DictBatcher, ModelHost, type Batcher, type Merged, type Partition, type TensorLike } from 'microbatch';

type Request = { readonly features: TensorLike; readonly scale: TensorLike };
type Batch = { readonly features: TensorLike; readonly scale: TensorLike };

/**
 * merge: one Float32Array per key, each request copied once. split: one result per request, in
 * order, each with its own copy of its row. partition: requests of another width run in their
 * own model call; a request without the keys is refused alone (the others still run).
 */
class FeatureBatcher implements Batcher<Request, TensorLike, Batch, TensorLike, number> {
  rows(): number {
    return 1;
  }

  partition(items: readonly Request[]): Partition {
    const byWidth = new Map<number, number[]>();
    const rejected: Array<{ index: number; error: Error }> = [];
    items.forEach((item, index) => {
      if (item?.features?.dims?.length !== 2 || item.features.dims[0] !== 1 || item.scale?.data?.length !== 1) {
        const got = typeof item === 'object' && item !== null ? `keys ${Object.keys(item).join(', ') || '(none)'}` : String(item);
        rejected.push({ index, error: new TypeError(`FeatureBatcher: expected { features: [1, F], scale: [] }, got ${got}`) });
        return;
      }
      const width = item.features.dims[1] as number;
      byWidth.set(width, [...(byWidth.get(width) ?? []), index]);
    });
    return { groups: [...byWidth.values()], rejected };
  }

  merge(items: readonly Request[]): Merged<Batch, number> {
    const width = items[0]!.features.dims[1] as number;
    const features = new Float32Array(items.length * width);
    const scale = new Float32Array(items.length);
    items.forEach((item, i) => {
      features.set(item.features.data as Float32Array, i * width);
      scale[i] = (item.scale.data as Float32Array)[0]!;
    });
    return {
      batch: { features: { type: 'float32', data: features, dims: [items.length, width] }, scale: { type: 'float32', data: scale, dims: [items.length] } },
      ctx: items.length,
    };
  }

  split(output: TensorLike, count: number): ReadonlyArray<TensorLike | Error> {
    const [n, k] = output.dims as [number, number];
    if (n !== count) return new Array<Error>(count).fill(new Error(`FeatureBatcher: expected ${count} output rows, got ${n}`));
    const data = output.data as Float32Array;
    return Array.from({ length: n }, (_, i) => ({ type: 'float32', data: data.slice(i * k, (i + 1) * k), dims: [1, k] }));
  }
}

// The model: sum of the features times the scale, and their max → [N, 2].
async function model(batch: Batch): Promise<TensorLike> {
  const [n, f] = batch.features.dims as [number, number];
  const x = batch.features.data as Float32Array;
  const s = batch.scale.data as Float32Array;
  const out = new Float32Array(n * 2);
  for (let i = 0; i < n; i++) {
    const row = x.subarray(i * f, (i + 1) * f);
    out[i * 2] = row.reduce((a, b) => a + b, 0) * s[i]!;
    out[i * 2 + 1] = Math.max(...row);
  }
  console.log(`  model call: features [${n}, ${f}]`);
  return { type: 'float32', data: out, dims: [n, 2] };
}

const request = (features: number[], scale: number): Request => ({
  features: { type: 'float32', data: new Float32Array(features), dims: [1, features.length] },
  scale: { type: 'float32', data: new Float32Array([scale]), dims: [] },
});

async function main(): Promise<void> {
  console.log('custom FeatureBatcher');
  const custom = new ModelHost(model, { maxBatchSize: 8, batcher: new FeatureBatcher() });
  const results = await Promise.all([
    custom.inference(request([1, 2, 3], 2)),
    custom.inference(request([4, 5], 1)),
    custom.inference(request([0, 0, 9], 0.5)),
    custom.inference({ features: request([1], 1).features } as Request).catch((e: Error) => e),
  ]);
  results.forEach((r, i) => console.log(`  request ${i} →`, r instanceof Error ? r.message : Array.from(r.data as Float32Array)));
  await custom.stop();

  // The built-in DictBatcher does the same with a batch axis per key (a scale per row is [1] here).
  console.log('built-in DictBatcher');
  const dict = new DictBatcher<Record<string, TensorLike>, Record<string, TensorLike>>({ inputs: { features: 0, scale: 0 } });
  const host = new ModelHost(async (b: Record<string, TensorLike>) => ({ y: await model(b as Batch) }), { maxBatchSize: 8, batcher: dict });
  const withRow = (r: Request): Record<string, TensorLike> => ({ features: r.features, scale: { ...r.scale, dims: [1] } });
  const [a, b] = await Promise.all([host.inference(withRow(request([1, 2, 3], 2))), host.inference(withRow(request([0, 0, 9], 0.5)))]);
  console.log('  request 0 →', Array.from(a!.y!.data as Float32Array));
  console.log('  request 1 →', Array.from(b!.y!.data as Float32Array));
  await host.stop();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
