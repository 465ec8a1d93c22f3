// A strictly type-checked TypeScript consumer in the decorator style: tsyringe injection, @batching,
// createHost, and inference() typed from predictBatch.
import 'reflect-metadata';
import { inject, injectable } from 'tsyringe';
import { batching, createHost, ModelHost, type HostStats } from 'microbatch';
import type { ConcatBatcherOptions } from 'microbatch/batchers';
import type { GenerationStats } from 'microbatch/generate';
import type { ReleaseDecision } from 'microbatch/policy';
import type { ServeHostOptions } from 'microbatch/socket';
import type { WorkerExecutorOptions } from 'microbatch/worker';

// Every subpath's types resolve (typesVersions and exports agree).
type Subpaths = [ConcatBatcherOptions, GenerationStats, ReleaseDecision, ServeHostOptions, WorkerExecutorOptions];
export const subpaths: Subpaths | undefined = undefined;

const Scale = Symbol('Scale');

@injectable()
class Scaler {
  constructor(@inject(Scale) private readonly factor: number) {}

  @batching({ maxBatchSize: 4 })
  async predictBatch(xs: readonly number[]): Promise<number[]> {
    return xs.map((x) => x * this.factor);
  }
}

async function main(): Promise<void> {
  const host = await createHost(Scaler, { context: { [Scale]: { useValue: 3 } } });
  const ys: number[] = await Promise.all([1, 2, 3, 4, 5].map((x) => host.inference(x)));
  // @ts-expect-error: a string is not one item of predictBatch's input
  void host.inference('seven').catch(() => undefined);
  const stats: HostStats = host.stats;
  await host.stop();
  if (ys.join(',') !== '3,6,9,12,15') throw new Error(`unexpected results ${ys.join(',')}`);
  if (stats.batches < 2) throw new Error(`expected at least 2 batches of at most 4, got ${stats.batches}`);

  const engine = new ModelHost(async (texts: readonly string[]) => texts.map((t) => t.length), { maxBatchSize: 8 });
  const length: number = await engine.inference('four');
  await engine.stop();
  if (length !== 4) throw new Error(`expected 4, got ${length}`);
  console.log('typescript consumer: ok');
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
