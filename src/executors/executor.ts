import { describe } from '../core/describe';
/**
 * Where the batch function runs. A plain function passed to `ModelHost` runs inline, on the
 * calling thread; an executor object can also prepare itself (`start`) and release what it holds
 * (`stop`), for example a pool of worker threads that host the model.
 *
 * @example
 * ```ts
 * const executor: Executor<readonly number[], number[]> = {
 *   start: async () => { model = await load(); },
 *   run: (xs) => model.predict(xs),
 *   stop: async () => model.dispose(),
 * };
 * const host = new ModelHost(executor, { maxBatchSize: 16 });
 * ```
 */
export interface Executor<Batch, BatchOut> {
  /** Prepares the executor; the host awaits it (once) before the first batch. */
  start?(): Promise<void>;
  /** Runs one batch. */
  run(batch: Batch): BatchOut | PromiseLike<BatchOut>;
  /** Releases everything; the host calls it once, after the last batch has finished. */
  stop?(): Promise<void>;
}

/** A batch function: the simplest executor. */
export type BatchFunction<Batch, BatchOut> = (batch: Batch) => BatchOut | PromiseLike<BatchOut>;

/** A batch function or an executor, as an executor; a TypeError naming what came otherwise. @internal */
export function toExecutor<Batch, BatchOut>(where: string, value: unknown, position: string): Executor<Batch, BatchOut> {
  if (typeof value === 'function') return { run: value as BatchFunction<Batch, BatchOut> };
  if (typeof value === 'object' && value !== null && typeof (value as Executor<Batch, BatchOut>).run === 'function') return value as Executor<Batch, BatchOut>;
  throw new TypeError(`${where}: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch)${position === '' ? '' : `, ${position}`}, got ${describe(value)}`);
}
