import { pathToFileURL } from 'node:url';
import { describe } from '../../core/describe';
import type { WorkerBoot, WorkerContext } from './protocol';

/**
 * What a worker module may return from its factory (or export directly): an object that runs
 * batches inside the worker, with optional set-up and tear-down.
 *
 * @example
 * ```ts
 * export default async function (ctx: WorkerContext): Promise<WorkerBatchObject<Float32Array[], number[]>> {
 *   const session = await loadSession(ctx.workerData.modelPath, { intraOpNumThreads: ctx.intraOpNumThreads }); // microbatch/onnx
 *   return { run: (rows) => predict(session, rows), stop: () => session.release() };
 * }
 * ```
 */
export interface WorkerBatchObject<Batch = unknown, BatchOut = unknown> {
  /** Prepares the object (called once in the worker before the first batch). */
  start?(context: WorkerContext): void | PromiseLike<void>;
  /** Runs one batch inside the worker. */
  run(batch: Batch): BatchOut | PromiseLike<BatchOut>;
  /** Releases what it holds (called once when the executor stops). */
  stop?(): void | PromiseLike<void>;
  /**
   * Set when `run` keeps nothing of the batch once it returns (no array of it cached, nothing
   * still reading it): the batch's buffers then go back to the main thread with the answer, and
   * the next batch of the same size is built in them instead of in fresh memory (buffers of
   * 64 KiB and more; the ONNX workers of `createOnnxHost` do this). A batch function that keeps a
   * batch array would find it emptied after it returns.
   * @default false
   *
   * @example
   * ```ts
   * return { run: (batch: Float32Array) => predict(session, batch), returnsBatch: true };
   * ```
   */
  readonly returnsBatch?: boolean;
}

/**
 * The export a worker module provides: a factory called once per worker with its
 * {@link WorkerContext}, returning (a promise of) a batch function or a {@link WorkerBatchObject}.
 *
 * @example
 * ```ts
 * // square.worker.ts: `new WorkerExecutor({ module: require.resolve('./square.worker') })`
 * const factory: WorkerFactory<readonly number[], number[]> = () => (xs) => xs.map((x) => x * x);
 * export default factory;
 * ```
 */
export type WorkerFactory<Batch = unknown, BatchOut = unknown, Data = unknown> = (
  context: WorkerContext<Data>,
) => ((batch: Batch) => BatchOut | PromiseLike<BatchOut>) | WorkerBatchObject<Batch, BatchOut> | PromiseLike<((batch: Batch) => BatchOut | PromiseLike<BatchOut>) | WorkerBatchObject<Batch, BatchOut>>;

/** The loaded target, ready to run batches. @internal */
export interface WorkerTarget {
  run(batch: unknown): unknown;
  stop?(): unknown;
  /** The batch object's `returnsBatch`. */
  readonly returnsBatch: boolean;
}

// A real dynamic import, kept out of TypeScript's reach: compiled to CommonJS, `import()` becomes
// `require()`, which cannot load an ES module.
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<Record<string, unknown>>;

async function loadModule(path: string): Promise<unknown> {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module is chosen at run time
    return require(path) as unknown;
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ERR_REQUIRE_ESM') return importEsm(pathToFileURL(path).href);
    throw new Error(`could not load the worker module ${path}: ${(e as Error).message}`, { cause: e });
  }
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

function exportsList(mod: unknown): string {
  if ((typeof mod !== 'object' && typeof mod !== 'function') || mod === null) return 'none';
  const keys = Object.keys(mod).filter((k) => k !== '__esModule').sort();
  return keys.length === 0 ? 'none' : keys.join(', ');
}

/**
 * Loads the worker module and turns its export into a {@link WorkerTarget}. Every failure says
 * what was wrong (missing module, missing export, wrong kind of export, bad factory result).
 * @internal
 */
export async function loadWorkerTarget(boot: WorkerBoot): Promise<WorkerTarget> {
  const mod = await loadModule(boot.module);
  const record = (typeof mod === 'object' || typeof mod === 'function') && mod !== null ? (mod as Record<string, unknown>) : {};
  // 'default' covers `export default` (compiled to `exports.default`) and `module.exports = fn`.
  const exported = boot.exportName === 'default' ? (record.default ?? mod) : record[boot.exportName];
  const what = `the export ${JSON.stringify(boot.exportName)} of ${boot.module}`;
  if (exported === undefined) {
    throw new TypeError(`${boot.module} has no export named ${JSON.stringify(boot.exportName)}; its exports are: ${exportsList(mod)}`);
  }
  if (isClass(exported)) {
    throw new TypeError(`${what} is a class; export a factory (ctx) => batchFn (or an object with run(batch)) that builds it`);
  }
  let made: unknown = exported;
  if (typeof exported === 'function') {
    made = await (exported as WorkerFactory)(boot.context);
    if (typeof made === 'function') return { run: made as (b: unknown) => unknown, returnsBatch: false };
  }
  const obj = made as Partial<WorkerBatchObject> | null;
  if (typeof obj !== 'object' || obj === null || typeof obj.run !== 'function') {
    throw new TypeError(
      typeof exported === 'function'
        ? `the factory ${what} returned ${describe(made)}; expected a batch function or an object with run(batch)`
        : `${what} is ${describe(exported)}; expected a factory (ctx) => batchFn, or an object with run(batch)`,
    );
  }
  await obj.start?.(boot.context);
  return {
    run: (b) => (obj.run as (x: unknown) => unknown).call(obj, b),
    ...(obj.stop !== undefined ? { stop: () => (obj.stop as () => unknown).call(obj) } : {}),
    returnsBatch: obj.returnsBatch === true,
  };
}
