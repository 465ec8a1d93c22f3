import { deriveOptions, fail, type ResolvedOptions } from '../core/options';
import type { Executor } from '../executors/executor';
import { WorkerExecutor } from '../executors/worker/worker-executor';
import { started } from '../engine/start-host';
import { HostedModel } from './hosted-model';

/** What `createHost`'s `executor` option turned out to be. @internal */
export type Placement =
  | { readonly kind: 'inline' }
  | { readonly kind: 'worker'; readonly options: object }
  | { readonly kind: 'custom'; readonly executor: Executor<unknown, unknown> & { readonly concurrency?: unknown } };

const EXPECTED = "'inline', 'worker', an object of worker options, or an executor object with a run(batch) method";

/**
 * Sorts `createHost`'s `executor` value. The rule is structural and has no overlap: an object with a
 * `run` property is an executor (worker options have no `run`), any other plain object is worker
 * options. Checked before the class or any provider is touched.
 * @internal
 */
export function classifyPlacement(where: string, value: unknown): Placement {
  if (value === 'inline') return { kind: 'inline' };
  if (value === 'worker') return { kind: 'worker', options: {} };
  if (typeof value === 'function') {
    fail(where, 'executor', `${EXPECTED} (to run batches with a function, pass { run: fn })`, value);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'executor', EXPECTED, value);
  const o = value as Record<string, unknown>;
  if ('run' in o) {
    if (typeof o.run !== 'function') fail(where, 'executor.run', 'a function (an executor object runs each batch with run(batch))', o.run);
    for (const hook of ['start', 'stop'] as const) {
      if (o[hook] !== undefined && typeof o[hook] !== 'function') fail(where, `executor.${hook}`, 'a function or absent', o[hook]);
    }
    return { kind: 'custom', executor: o as unknown as Executor<unknown, unknown> };
  }
  // Without this, a `{ start, stop }` object missing its run would be blamed for unknown worker options.
  if (typeof o.start === 'function' || typeof o.stop === 'function') {
    fail(where, 'executor', `${EXPECTED}; this object has start/stop but no run`, value);
  }
  return { kind: 'worker', options: o };
}

/**
 * `createHost` with a user-supplied executor: the class contributed the `@batching` options, the
 * method name and the types; every merged batch goes to `executor.run`. Nothing is resolved here,
 * since the pool holds the model.
 * @internal
 */
export async function hostOnExecutor(
  executor: Executor<unknown, unknown> & { readonly concurrency?: unknown },
  stopExecutor: boolean,
  options: ResolvedOptions,
  concurrencyGiven: boolean,
  where: string,
): Promise<HostedModel<unknown, unknown, unknown, unknown>> {
  const hostOptions = concurrencyGiven ? options : deriveOptions(where, options, { maxConcurrentBatches: concurrencyOf(executor, where) });
  // Called as methods, so that class-based pools (WorkerExecutor, piscina) keep their `this`.
  const adapter: Executor<unknown, unknown> = {
    run: (batch) => executor.run(batch),
    successor: () => {
      throw new TypeError(`${where}.reload: this host runs on your executor object, and nothing here is built from a context; pass the new executor: reload(executor)`);
    },
    reloadOptionKeys: ['context'],
  };
  if (executor.start !== undefined) adapter.start = () => executor.start!();
  // A shared pool outlives each host: leaving out stop() makes ModelHost.stop() skip it.
  if (stopExecutor && executor.stop !== undefined) adapter.stop = () => executor.stop!();
  return started(new HostedModel(adapter, hostOptions, where));
}

function concurrencyOf(executor: Executor<unknown, unknown> & { readonly concurrency?: unknown }, where: string): number {
  const c = executor.concurrency;
  if (c !== undefined) {
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 1) {
      fail(where, 'executor.concurrency', 'an integer from 1 and up (how many batches the executor runs at once)', c, typeof c === 'number' ? RangeError : TypeError);
    }
    return c;
  }
  if (executor instanceof WorkerExecutor) return executor.workers;
  return 1;
}
