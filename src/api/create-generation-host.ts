// tsyringe refuses to load without the Reflect polyfill; importing it first is idempotent.
import 'reflect-metadata';
import { container as globalContainer, type DependencyContainer } from 'tsyringe';
import { describe } from '../core/describe';
import { fail, rejectUnknownKeys } from '../core/options';
import { GenerationHost } from '../generate/generation-host';
import { GENERATION_OPTION_KEYS } from '../generate/options';
import { generationHostOnModule, type WorkerGenerationHost, type WorkerGenerationOptions } from '../generate/worker-generation';
import { releaseContext, resolveInContext, type ContextProviders } from './context';
import type { Constructor } from './create-host';
import { findGeneratingMethod, type GeneratingOptions, type StateOf } from './generating';
import { nameOf } from './batching-metadata';

/**
 * Options of {@link createGenerationHost}: where the class is resolved, its context, and
 * overrides of the `@generating` options (precedence: defaults < `@generating` < these).
 *
 * @example
 * ```ts
 * const options: CreateGenerationHostOptions = { context: { [OnnxSession]: () => InferenceSession.create('decoder.onnx') }, maxBatchSize: 32 };
 * ```
 */
export interface CreateGenerationHostOptions extends Partial<GeneratingOptions> {
  /**
   * The container the host's own child container is created from; nothing is registered in it.
   * @default tsyringe's global `container`
   */
  container?: DependencyContainer;
  /**
   * What the class is constructed with (see `ContextProviders`); async factories are awaited, and
   * what the host creates is released on `stop()`.
   * @default no context
   */
  context?: ContextProviders;
}

const OWN_KEYS = ['container', 'context'];
// initialState comes from the class.
const GENERATION_KEYS = GENERATION_OPTION_KEYS.filter((k) => k !== 'initialState');

/**
 * Builds a {@link GenerationHost} for a class with a `@generating` step method: creates a child of
 * the tsyringe container, creates the `context` in it, resolves the class there, and batches its
 * step per decode step (`initialState` from the class). `host.stop()` drains, then releases the
 * instance and the context the host created, last created first. The `createHost` of generation.
 *
 * Given a worker module's path instead of a class (`createGenerationHost(require.resolve('./decoder.worker'),
 * { maxBatchSize: 16 })`), the decode steps run in one worker thread whose module's factory makes
 * the model (see {@link ModuleGenerationOptions}); this replaces `createWorkerGenerationHost`.
 *
 * @example
 * ```ts
 * const host = await createGenerationHost(Writer, { context: { [OnnxSession]: () => InferenceSession.create('decoder.onnx') } });
 * for await (const token of host.generate([BOS, 7])) process.stdout.write(vocab[token]);
 * await host.stop();
 * ```
 */
export async function createGenerationHost<T extends object>(Class: Constructor<T>, options?: CreateGenerationHostOptions): Promise<GenerationHost<StateOf<T>, unknown, unknown>>;
export async function createGenerationHost<Data = unknown>(module: string, options: ModuleGenerationOptions<Data>): Promise<WorkerGenerationHost>;
export async function createGenerationHost(
  Class: Constructor<object> | string,
  options: CreateGenerationHostOptions | ModuleGenerationOptions = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- either family's host: its state type is the overload's
): Promise<GenerationHost<any, any, any>> {
  if (typeof Class !== 'string') return generationHostOnClass(Class, options as CreateGenerationHostOptions);
  const where = `createGenerationHost(${JSON.stringify(Class)})`;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object with at least maxBatchSize', options);
  const { executor = 'worker', ...rest } = options as ModuleGenerationOptions;
  if (executor !== 'worker') fail(where, 'executor', "'worker' (a worker module's factory builds the model in a worker thread), or absent", executor);
  return generationHostOnModule(where, { ...rest, module: Class });
}

/**
 * Options of `createGenerationHost(module, options)`: those of a worker generation host without
 * `module` (the first argument), and `executor` only as `'worker'`, as `createHost(module)` takes.
 *
 * @example
 * ```ts
 * const options: ModuleGenerationOptions = { workerData: 'decoder.onnx', maxBatchSize: 16, stopTokens: [EOS] };
 * const host = await createGenerationHost(require.resolve('./decoder.worker'), options);
 * ```
 */
export type ModuleGenerationOptions<Data = unknown> = Omit<WorkerGenerationOptions<Data>, 'module'> & {
  /**
   * Where the steps run: a worker module's factory builds the model in a worker thread.
   * @default 'worker'
   */
  executor?: 'worker';
};

async function generationHostOnClass<T extends object>(Class: Constructor<T>, options: CreateGenerationHostOptions = {}): Promise<GenerationHost<StateOf<T>, unknown, unknown>> {
  const where = `createGenerationHost(${typeof Class === 'function' ? nameOf(Class) : '?'})`;
  if (typeof Class !== 'function') throw new TypeError(`${where}: expected a class with a @generating step method, got ${describe(Class)}`);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail(where, 'options', 'an object', options);
  rejectUnknownKeys(where, options, [...OWN_KEYS, ...GENERATION_KEYS]);
  const found = findGeneratingMethod(Class);
  if (found === undefined) throw new TypeError(`${where}: ${nameOf(Class)} has no @generating method; decorate its decode step with @generating({ maxBatchSize, ... })`);
  const { container = globalContainer, context, ...overrides } = options;
  if (typeof container !== 'object' || container === null || typeof container.createChildContainer !== 'function') fail(where, 'container', 'a tsyringe DependencyContainer', container);
  const generation: Record<string, unknown> = { name: `${nameOf(Class)}.${String(found.method)}`, ...found.options };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) generation[k] = v;

  const { loaded, instance } = await resolveInContext(container, Class, context, where);
  const self = instance as Record<string | symbol, (arg: unknown) => unknown>;
  try {
    return new GenerationHost<StateOf<T>, unknown, unknown>(
      {
        run: (batch) => self[found.method]!(batch),
        stop: () => releaseContext(loaded, where, [instance]),
      },
      { ...(generation as unknown as GeneratingOptions), initialState: (prompt) => self.initialState!(prompt) as StateOf<T> },
    );
  } catch (e) {
    await releaseContext(loaded, where, [instance]).catch(() => undefined);
    throw e;
  }
}
