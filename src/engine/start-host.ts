import type { HostOptions, ResolvedOptions } from '../core/options';
import type { Executor } from '../executors/executor';
import { ModelHost } from './model-host';

/**
 * Builds a host on `executor` and starts it: every entry point that returns a ready host
 * (`createHost`, `createOnnxHost`) goes through here, so they resolve only once
 * batches can run. A failed start stops the host again, so nothing it began (workers, a pool, a
 * loaded context) outlives the rejection.
 * @internal
 */
export async function startHost<In, Out, Batch, BatchOut>(
  executor: Executor<Batch, BatchOut>,
  options: ResolvedOptions | HostOptions<In, Out, Batch, BatchOut>,
): Promise<ModelHost<In, Out, Batch, BatchOut>> {
  return started(new ModelHost<In, Out, Batch, BatchOut>(executor, options as HostOptions<In, Out, Batch, BatchOut> & { batcher: NonNullable<HostOptions<In, Out, Batch, BatchOut>['batcher']> }));
}

/**
 * Starts `host` (a `ModelHost` or a subclass of it, such as an ONNX host); a failed start stops it
 * again, so nothing it began outlives the rejection.
 * @internal
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any host, whatever it carries
export async function started<H extends ModelHost<any, any, any, any>>(host: H): Promise<H> {
  try {
    await host.start();
  } catch (e) {
    await host.stop({ drain: false }).catch(() => undefined);
    throw e;
  }
  return host;
}
