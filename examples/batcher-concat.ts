/**
 * ConcatBatcher: single-row requests concatenated into one [N, 4] tensor, one model call, and the
 * [N, 3] output cut back into a [1, 3] tensor per caller. Run: npx ts-node examples/batcher-concat.ts
 */
import { ConcatBatcher, ModelHost, type TensorLike } from 'microbatch';

// A stand-in for a model: a fixed 4 → 3 linear layer over a [N, 4] float32 batch.
const W = [
  [1, 0, 0, 1],
  [0, 2, 0, 0],
  [0, 0, 3, -1],
];
async function linear(x: TensorLike): Promise<TensorLike> {
  const n = x.dims[0] as number;
  const input = x.data as Float32Array;
  const out = new Float32Array(n * 3);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < 3; j++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += (W[j]![k] as number) * (input[i * 4 + k] as number);
      out[i * 3 + j] = s;
    }
  }
  console.log(`model called once with a batch of shape [${x.dims.join(', ')}]`);
  return { type: 'float32', data: out, dims: [n, 3] };
}

async function main(): Promise<void> {
  const host = new ModelHost(linear, { maxBatchSize: 16, batcher: new ConcatBatcher({ shape: [-1, 4] }) });
  const row = (...v: number[]): TensorLike => ({ type: 'float32', data: new Float32Array(v), dims: [1, v.length] });
  const [a, b, c] = await Promise.all([
    host.inference(row(1, 2, 3, 4)),
    host.inference(row(0, 1, 0, 1)),
    // A request of the wrong width is refused alone; the others still run.
    host.inference(row(1, 2, 3)).catch((e: Error) => e),
  ]);
  console.log('a →', Array.from((a as TensorLike).data as Float32Array), (a as TensorLike).dims);
  console.log('b →', Array.from((b as TensorLike).data as Float32Array), (b as TensorLike).dims);
  console.log('c →', (c as Error).message);
  await host.stop();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
