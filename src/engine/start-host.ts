import type { HostOptions, ResolvedOptions } from '../core/options';
import type { Executor } from '../executors/executor';
import { ModelHost } from './model-host';

/**
 * Builds a host on `executor` and starts it: every entry point that returns a ready host
 * (`createHost`, `createWorkerHost`, `createOnnxHost`) goes through here, so they resolve only once
 * batches can run. A failed start stops the host again, so nothing it began (workers, a pool, a
 * loaded context) outlives the rejection.
 * @internal
 */
export async function startHost<In, Out, Batch, BatchOut>(
  executor: Executor<Batch, BatchOut>,
  options: ResolvedOptions | HostOptions<In, Out, Batch, BatchOut>,
): Promise<ModelHost<In, Out, Batch, BatchOut>> {
  const host = new ModelHost<In, Out, Batch, BatchOut>(executor, options as HostOptions<In, Out, Batch, BatchOut> & { batcher: NonNullable<HostOptions<In, Out, Batch, BatchOut>['batcher']> });
  try {
    await host.start();
  } catch (e) {
    await host.stop({ drain: false }).catch(() => undefined);
    throw e;
  }
  return host;
}
