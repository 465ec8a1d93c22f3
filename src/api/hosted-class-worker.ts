/**
 * The worker side of `createHost(C, { executor: 'worker' })`: each worker thread loads this module,
 * finds the model class and its context by module path and export name, creates the context in a
 * child container of its own, resolves the class, and serves batches with its `@batching` method.
 * Context providers are functions, which cannot cross threads: that is why they are loaded here
 * from their module rather than sent.
 * @internal
 */
import 'reflect-metadata';
import { container } from 'tsyringe';
import type { WorkerContext } from '../executors/worker/protocol';
import type { WorkerBatchObject } from '../executors/worker/worker-target';
import { loadExport } from '../executors/worker/find-export';
import { loadContext, releaseContext, type ContextProviders } from './context';
import { WorkerInfo } from './tokens';

/** What `createHost` tells each worker. @internal */
export interface HostedClassData {
  readonly classModule: string;
  readonly classExport: string;
  readonly contextModule: string | undefined;
  readonly contextExport: string | undefined;
  readonly method: string | symbol;
  readonly where: string;
}

export default async function hostedClass(ctx: WorkerContext<HostedClassData>): Promise<WorkerBatchObject> {
  const data = ctx.workerData;
  const where = `${data.where} (worker ${ctx.workerIndex})`;
  const Class = loadExport(data.classModule, data.classExport);
  if (typeof Class !== 'function') {
    throw new TypeError(`${where}: the export ${JSON.stringify(data.classExport)} of ${data.classModule} is not a class in the worker`);
  }
  const context = data.contextModule === undefined ? undefined : (loadExport(data.contextModule, data.contextExport ?? 'default') as ContextProviders);
  const root = container.createChildContainer();
  root.register(WorkerInfo, { useValue: ctx });
  const loaded = await loadContext(root, context, where);
  let instance: Record<string | symbol, (batch: unknown) => unknown>;
  try {
    instance = loaded.container.resolve(Class as new () => Record<string | symbol, (batch: unknown) => unknown>);
  } catch (e) {
    await releaseContext(loaded, where).catch(() => undefined);
    throw e;
  }
  const method = data.method;
  return {
    run: (batch) => (instance[method] as (b: unknown) => unknown).call(instance, batch),
    stop: () => releaseContext(loaded, where, [instance]),
  };
}
