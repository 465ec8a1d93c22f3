import { extname, join } from 'node:path';
import type { Batcher } from '../core/batcher';
import { fail, optionKeys, rejectUnknownKeys } from '../core/options';
import { WorkerStartError } from '../executors/worker/errors';
import { resolveWorkerOptions, type WorkerExecutorOptions } from '../executors/worker/options';
import { resolveWorkerModule } from '../executors/worker/spawn';
import { WorkerExecutor } from '../executors/worker/worker-executor';
import { GenerationHost } from './generation-host';
import type { GenerationWorkerData, WorkerStep, WorkerStepResult } from './generation.worker';
import { GENERATION_OPTION_KEYS, resolveGeneration, type GenerationOptions, type StepInput, type StepOutput } from './options';

/**
 * Options of {@link createWorkerGenerationHost}: the generation limits, and the worker's module
 * and settings. The step function, batcher, `initialState` and `choose` are functions, which
 * cannot cross threads: the worker module's factory makes them (a `GenerationModel`).
 *
 * @example
 * ```ts
 * const options: WorkerGenerationOptions = { module: require.resolve('./decoder.worker'), workerData: 'decoder.onnx', maxBatchSize: 16, stopTokens: [EOS] };
 * ```
 */
export interface WorkerGenerationOptions<Data = unknown>
  extends Omit<GenerationOptions<unknown>, 'initialState' | 'batcher' | 'choose' | 'releaseState' | 'prefill'>,
    Pick<WorkerExecutorOptions<Data>, 'module' | 'export' | 'intraOpNumThreads' | 'resourceLimits' | 'workerData' | 'loadsTypeScript' | 'startTimeoutMs' | 'stopTimeoutMs'> {}

/**
 * A generation host whose steps run in a worker thread (what {@link createWorkerGenerationHost}
 * resolves to): a `GenerationHost` whose states, on this thread, are sequence ids.
 *
 * @example
 * ```ts
 * const host: WorkerGenerationHost = await createWorkerGenerationHost({ module: require.resolve('./decoder.worker'), maxBatchSize: 16 });
 * const tokens = await host.generate([BOS, 7], { maxTokens: 32 }).collect();
 * console.log(tokens, host.workerSequences); // the worker still holds this sequence's state until the next step drops it
 * ```
 */
export class WorkerGenerationHost extends GenerationHost<number, WorkerStep, WorkerStepResult[]> {
  readonly #worker: { live: number };

  /** @internal */
  constructor(executor: WorkerExecutor<WorkerStep, WorkerStepResult[]>, options: GenerationOptions<number, WorkerStep, WorkerStepResult[]>, worker: { live: number }) {
    super(executor, options);
    this.#worker = worker;
  }

  /** Sequences whose state the worker held after its last step (running ones, plus ended ones not yet dropped). */
  get workerSequences(): number {
    return this.#worker.live;
  }
}

const WORKER_KEYS = optionKeys<Pick<WorkerGenerationOptions, 'module' | 'export' | 'intraOpNumThreads' | 'resourceLimits' | 'workerData' | 'loadsTypeScript' | 'startTimeoutMs' | 'stopTimeoutMs'>>({
  module: true,
  export: true,
  intraOpNumThreads: true,
  resourceLimits: true,
  workerData: true,
  loadsTypeScript: true,
  startTimeoutMs: true,
  stopTimeoutMs: true,
});
/** Functions that the worker module makes: named in the error that refuses them here. */
const IN_THE_WORKER = ['initialState', 'batcher', 'choose', 'releaseState'];

/**
 * Builds and starts a {@link GenerationHost} whose decode steps run in one worker thread.
 *
 * @deprecated Use {@link createGenerationHost} with the worker module's path as the first argument,
 * as `createHost` takes one: `createGenerationHost(require.resolve('./decoder.worker'), { maxBatchSize: 16 })`.
 *
 * What it builds: the
 * running sequences' states stay in the worker between steps, and only token ids cross threads
 * (a new sequence's prompt on its first step, one chosen token per sequence back). The event loop
 * is never blocked by a step. Resolves once the worker has loaded its module and made its model;
 * rejects with the worker's `WorkerStartError` otherwise.
 *
 * One worker, because a sequence's state lives where its steps ran: every step of it must go
 * there. For more cores, give the worker more `intraOpNumThreads`, or run several hosts. If the
 * worker dies, the sequences in its step fail with `WorkerCrashedError` (their states are gone) and
 * new ones start on the replacement.
 *
 * @example
 * ```ts
 * // decoder.worker.ts: export default async (ctx) => ({ step: (f) => session.run(f), batcher, initialState });
 * const host = await createWorkerGenerationHost({ module: require.resolve('./decoder.worker'), maxBatchSize: 16 });
 * for await (const token of host.generate([BOS, 7])) process.stdout.write(vocab[token]);
 * await host.stop(); // drains, then ends the worker
 * ```
 */
export async function createWorkerGenerationHost<Data = unknown>(options: WorkerGenerationOptions<Data>): Promise<WorkerGenerationHost> {
  return generationHostOnModule('createWorkerGenerationHost', options);
}

/**
 * `createGenerationHost(module, options)` (and the deprecated `createWorkerGenerationHost`): the
 * decode steps of the worker module's model run in one worker thread.
 * @internal
 */
export async function generationHostOnModule<Data = unknown>(where: string, options: WorkerGenerationOptions<Data>): Promise<WorkerGenerationHost> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object with at least module and maxBatchSize', options);
  for (const key of IN_THE_WORKER) {
    if ((options as unknown as Record<string, unknown>)[key] !== undefined) {
      throw new TypeError(`${where}: \`${key}\` cannot be sent to a worker thread (it is a function); make it in the worker module's factory, which returns { step, initialState, batcher?, choose? }`);
    }
  }
  if ((options as { prefill?: unknown }).prefill !== undefined) {
    throw new TypeError(`${where}: \`prefill\` is not supported in a worker yet: prompts are read through the step function, one token per step`);
  }
  rejectUnknownKeys(where, options, [...WORKER_KEYS, ...GENERATION_OPTION_KEYS.filter((k) => !IN_THE_WORKER.includes(k) && k !== 'prefill')]);
  const { module, export: exportName = 'default', intraOpNumThreads, resourceLimits, workerData, loadsTypeScript, startTimeoutMs, stopTimeoutMs, ...generation } = options;
  if (typeof module !== 'string' || module === '') fail(where, 'module', 'a module path (a non-empty string)', module);
  // Checked here, under this function's name, rather than by the host and the executor built below,
  // whose messages would name them instead of what the caller called.
  resolveGeneration(where, { ...generation, initialState: () => 0 });
  resolveWorkerOptions({ module, export: exportName, intraOpNumThreads, resourceLimits, workerData, loadsTypeScript, startTimeoutMs, stopTimeoutMs, name: where });
  let modulePath: string;
  try {
    // From the current directory, as WorkerExecutor resolves its module (not from this file).
    modulePath = resolveWorkerModule(module);
  } catch (e) {
    throw new WorkerStartError(`${where}: cannot find the worker module ${JSON.stringify(module)} (ids resolve from ${process.cwd()}; give an absolute path or require.resolve(...))`, undefined, e);
  }
  const name = generation.name ?? 'generation';
  const data: GenerationWorkerData = { module: modulePath, exportName, data: workerData, where: name };
  const executor = new WorkerExecutor<WorkerStep, WorkerStepResult[]>({
    name,
    module: join(__dirname, `generation.worker${extname(__filename)}`),
    workers: 1,
    workerData: data,
    ...(intraOpNumThreads === undefined ? {} : { intraOpNumThreads }),
    ...(resourceLimits === undefined ? {} : { resourceLimits }),
    ...(startTimeoutMs === undefined ? {} : { startTimeoutMs }),
    ...(stopTimeoutMs === undefined ? {} : { stopTimeoutMs }),
    loadsTypeScript: loadsTypeScript ?? /\.[cm]?tsx?$/.test(data.module),
  });

  // On this thread a sequence's state is its id; the worker holds the real one.
  let nextId = 1;
  // What the worker reported after its last step; the host's workerSequences reads it.
  const worker = { live: 0 };
  const prompts = new Map<number, readonly number[]>();
  let released: number[] = [];
  const batcher: Batcher<StepInput<number>, StepOutput<number>, WorkerStep, WorkerStepResult[], readonly number[]> = {
    merge(items) {
      const steps = items.map((s) => {
        const prompt = s.position === 0 ? prompts.get(s.state) : undefined;
        if (prompt !== undefined) prompts.delete(s.state);
        return { id: s.state, token: s.token, position: s.position, ...(prompt === undefined ? {} : { prompt }) };
      });
      const message: WorkerStep = { steps, released };
      released = [];
      return { batch: message, ctx: items.map((s) => s.state) };
    },
    split(results, ids) {
      return results.map((r, i) => {
        if (r instanceof Error) return r;
        worker.live = r.live;
        return { token: r.token, state: ids[i] as number };
      });
    },
  };
  const host = new WorkerGenerationHost(executor, {
    ...generation,
    name,
    batcher,
    initialState: (prompt) => {
      const id = nextId++;
      prompts.set(id, prompt);
      return id;
    },
    releaseState: (id) => {
      prompts.delete(id);
      released.push(id);
    },
  }, worker);
  try {
    await host.start();
  } catch (e) {
    await host.stop().catch(() => undefined);
    throw e;
  }
  return host;
}
