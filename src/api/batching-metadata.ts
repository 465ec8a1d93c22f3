// The metadata store needs the global `Reflect.defineMetadata` polyfill; importing it here (it is
// idempotent) keeps this module usable on its own, before the package entry has been loaded.
import 'reflect-metadata';
import type { HostOptions } from '../core/options';

/**
 * The options of `@batching(...)`: the same options as {@link ModelHost} (`maxBatchSize` is
 * required; see {@link HostOptions} for every default).
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 * @typeParam Batch - what the decorated method receives.
 * @typeParam BatchOut - what the decorated method returns.
 *
 * @example
 * ```ts
 * const options: BatchingOptions = { maxBatchSize: 32, maxDelayMs: 2, name: 'classifier' };
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- stored per class, typed loosely: the method's own signature types the host
export type BatchingOptions<In = any, Out = any, Batch = any, BatchOut = any> = HostOptions<In, Out, Batch, BatchOut>;

/**
 * One decorated method, as read back with {@link getBatchingMetadata}.
 *
 * @example
 * ```ts
 * const [{ method, options }] = getBatchingMetadata(Classifier); // 'predictBatch', { maxBatchSize: 32 }
 * ```
 */
export interface BatchingMetadata {
  /** The decorated method's name. */
  readonly method: string | symbol;
  /** The options given to `@batching` (a number `n` is stored as `{ maxBatchSize: n }`). */
  readonly options: Readonly<BatchingOptions>;
}

interface Entry extends BatchingMetadata {
  /** The class whose body carried the decorator, so a subclass may re-decorate an override. */
  readonly declaredOn: object;
}

/**
 * The reflect-metadata key under which a class keeps its decorated methods. A string, not a
 * symbol, so that two copies of microbatch in one process (a bundling accident) still agree.
 */
const METADATA_KEY = 'microbatch:batching';

/** The name every style uses for the batch method; `inference()` maps to it first. */
export const DEFAULT_BATCH_METHOD = 'predictBatch';

function entriesOf(target: object): ReadonlyMap<string | symbol, Entry> | undefined {
  // getMetadata walks the prototype chain of the constructor, so subclasses inherit the entries.
  return Reflect.getMetadata(METADATA_KEY, target) as ReadonlyMap<string | symbol, Entry> | undefined;
}

/**
 * Records one decorated method on its class. Throws when the same class already decorated that
 * method (two `@batching` on one method, or the class form plus the method form). @internal
 */
export function recordBatching(ctor: object, method: string | symbol, options: Readonly<BatchingOptions>, where: string): void {
  const inherited = entriesOf(ctor);
  const previous = inherited?.get(method);
  if (previous !== undefined && previous.declaredOn === ctor) {
    throw new TypeError(
      `${where}: @batching was applied twice to ${nameOf(ctor)}.${String(method)}; keep a single @batching(...) ` +
        'with all the options (the class form @batching(...) on a class counts as decorating predictBatch)',
    );
  }
  // A copy, never the parent's map: a subclass must not add methods to its base class.
  const own = new Map(inherited ?? []);
  own.set(method, { method, options, declaredOn: ctor });
  Reflect.defineMetadata(METADATA_KEY, own, ctor);
}

/**
 * Reads the `@batching` methods of a class (its own and inherited ones), in declaration order.
 * Empty when the class has none.
 *
 * @example
 * ```ts
 * class Classifier {
 *   @batching(32) async predictBatch(xs: readonly string[]) { return xs.map((x) => x.length); }
 * }
 * getBatchingMetadata(Classifier); // [{ method: 'predictBatch', options: { maxBatchSize: 32 } }]
 * ```
 */
export function getBatchingMetadata(Class: abstract new (...args: never[]) => unknown): readonly BatchingMetadata[] {
  const entries = entriesOf(Class);
  return entries === undefined ? [] : [...entries.values()].map(({ method, options }) => ({ method, options }));
}

/**
 * Chooses the batch method: the named one, else `predictBatch`, else the only decorated method.
 * Throws an error that says what to do when there is none or the choice is ambiguous. @internal
 */
export function findBatchMethod(Class: object, method: string | symbol | undefined, where: string): BatchingMetadata {
  const entries = entriesOf(Class);
  const name = nameOf(Class);
  if (entries === undefined || entries.size === 0) {
    throw new TypeError(
      `${where}: ${name} has no @batching method. Decorate its batch method, for example ` +
        '`@batching(32) async predictBatch(items) { ... }` (and import "reflect-metadata" first)',
    );
  }
  const list = [...entries.keys()].map((k) => `\`${String(k)}\``).join(', ');
  if (method !== undefined) {
    const found = entries.get(method);
    if (found === undefined) {
      throw new TypeError(`${where}: ${name}.${String(method)} is not decorated with @batching; the @batching methods of ${name} are ${list}`);
    }
    return found;
  }
  const chosen = entries.get(DEFAULT_BATCH_METHOD) ?? (entries.size === 1 ? [...entries.values()][0] : undefined);
  if (chosen === undefined) {
    throw new TypeError(
      `${where}: ${name} has several @batching methods (${list}) and none is named predictBatch, so the default ` +
        `cannot be chosen; pick one with createHost(${name}, { method: '…' }), or rename one to predictBatch`,
    );
  }
  return chosen;
}

/** The class's name for messages. @internal */
export function nameOf(Class: object): string {
  const name = (Class as { name?: unknown }).name;
  return typeof name === 'string' && name !== '' ? name : 'the class';
}
