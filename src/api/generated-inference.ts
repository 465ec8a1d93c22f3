import type { RequestOptions } from '../core/options';
import { HostStoppedError } from '../core/errors';
import type { BatchMethodKey, DefaultBatchMethod, ItemOf, ResultOf } from './batch-method-types';
import { findBatchMethod, getBatchingMetadata, nameOf } from './batching-metadata';
import { ModelHost } from '../engine/model-host';

/**
 * An instance of a class with an `@batching` method, with the members the decorator generates:
 * `inference(x, opts?)` (typed from the batch method `M`, `predictBatch` by default), and
 * `dispose()` / `[Symbol.asyncDispose]()`, which stop the instance's host (answering what it
 * accepted) and then run the class's own `dispose()` / `[Symbol.asyncDispose]()` if it has one.
 *
 * @typeParam T - the model class's instance type.
 * @typeParam M - the batch method that `inference()` maps to: `predictBatch` by default; name it
 * when the class's only `@batching` method has another name (without it the types are `unknown`).
 *
 * @example
 * ```ts
 * const model: Batching<Classifier> = asBatching(container.resolve(Classifier));
 * const label = await model.inference(row);
 * await model[Symbol.asyncDispose]();
 * ```
 */
export type Batching<T, M extends BatchMethodKey<T> = DefaultBatchMethod<T>> = T & {
  /** Submits one item; concurrent calls on this instance share one call of the batch method. */
  inference(item: ItemOf<T, M>, options?: RequestOptions): Promise<ResultOf<T, M>>;
  /** Stops this instance's host (draining), then runs the class's own `dispose()`, if any. */
  dispose(): Promise<void>;
  /** Stops this instance's host (draining), then runs the class's own disposer, if any. */
  [Symbol.asyncDispose](): Promise<void>;
};

/**
 * Gives an instance of an `@batching` class its {@link Batching} type (as `asGenerating` gives a
 * `@generating` class's instance its `Generating` type). This is a checked
 * narrowing, not a cast: it throws a `TypeError` when the instance's class has no `@batching`
 * method (and so no generated `inference()`).
 *
 * @example
 * ```ts
 * const model = asBatching(new Classifier(session));
 * const [a, b] = await Promise.all([model.inference(x1), model.inference(x2)]); // one batch
 * const embedder = asBatching<Embedder, 'embedBatch'>(new Embedder()); // its only @batching method
 * ```
 */
export function asBatching<T extends object, M extends BatchMethodKey<T> = DefaultBatchMethod<T>>(instance: T): Batching<T, M> {
  if (typeof instance !== 'object' || instance === null || getBatchingMetadata(instance.constructor as new () => unknown).length === 0) {
    const what = typeof instance === 'object' && instance !== null ? `an instance of ${nameOf(instance.constructor)}` : String(instance);
    throw new TypeError(`asBatching: expected an instance of a class with an @batching method, got ${what}; decorate its batch method with @batching(...)`);
  }
  return instance as Batching<T, M>;
}

/**
 * The older name of {@link Batching}.
 * @deprecated Use {@link Batching} (named after `@batching`, as `Generating` is after `@generating`).
 */
export type Batched<T, M extends BatchMethodKey<T> = DefaultBatchMethod<T>> = Batching<T, M>;

/**
 * The older name of {@link asBatching}.
 * @deprecated Use {@link asBatching} (named after `@batching`, as `asGenerating` is after `@generating`).
 *
 * @example
 * ```ts
 * const model = asBatched(new Classifier(session)); // now: asBatching(new Classifier(session))
 * ```
 */
export const asBatched: typeof asBatching = asBatching;

/** What the decorators keep per instance: its hosts, made on first use, and whether it was disposed. @internal */
export interface InstanceState {
  host?: ModelHost<unknown, unknown>;
  generation?: { stop(): Promise<void> };
  disposed?: Promise<void>;
}

/** Per-instance state, kept outside the instance so that the class's own fields stay untouched. */
const states = new WeakMap<object, InstanceState>();

/** The instance's state, made on first use. @internal */
export function instanceState(instance: object): InstanceState {
  let state = states.get(instance);
  if (state === undefined) {
    state = {};
    states.set(instance, state);
  }
  return state;
}

function hostOf(instance: object): ModelHost<unknown, unknown> {
  const state = instanceState(instance);
  if (state.host !== undefined) return state.host;
  const ctor = instance.constructor;
  const name = nameOf(ctor);
  if (state.disposed !== undefined) {
    throw new HostStoppedError(`${name}: this instance was disposed; its inference() accepts no new requests`);
  }
  const { method, options } = findBatchMethod(ctor, undefined, `${name}.inference`);
  const run = (batch: unknown): unknown => (instance as Record<string | symbol, (b: unknown) => unknown>)[method]!(batch);
  state.host = new ModelHost<unknown, unknown>(run as (b: readonly unknown[]) => Promise<unknown[]>, {
    name: `${name}.${String(method)}`,
    ...options,
  });
  return state.host;
}

/**
 * Stops the instance's host (once: later calls share the promise), then runs the class's own
 * disposer. The own disposer runs on every call, as it would without the decorator: this keeps a
 * subclass's `dispose()` that calls `super.dispose()` working.
 */
async function close(instance: object, own: (() => unknown) | undefined): Promise<void> {
  const state = instanceState(instance);
  state.disposed ??= Promise.all([state.host?.stop(), state.generation?.stop()]).then(() => undefined);
  await state.disposed;
  await own?.call(instance);
}

/** Generated disposers, mapped to the class's own disposer they wrap (to unwrap in subclasses). */
const generated = new WeakMap<object, (() => unknown) | undefined>();

/** The class's own disposer found on a prototype, seeing through a base class's generated one. */
function ownDisposer(fn: unknown): (() => unknown) | undefined {
  if (typeof fn !== 'function') return undefined;
  return generated.has(fn) ? generated.get(fn) : (fn as () => unknown);
}

/** Marks a prototype that already carries the generated members. */
const INSTALLED = Symbol('microbatch.generatedInference');

function define(proto: object, key: string | symbol, value: unknown): void {
  // Non-enumerable like class methods, and replaceable by a subclass or a test spy.
  Object.defineProperty(proto, key, { value, writable: true, configurable: true, enumerable: false });
}

/**
 * Adds the generated `inference()` (with `withInference`: for `@batching`), `dispose()` and
 * `[Symbol.asyncDispose]()` to the prototype of a decorated class (once per prototype). A class's
 * own `inference` is kept.
 * `dispose()` is what tsyringe calls when it disposes a container, so instances it built are torn
 * down with their container; the class's own disposers still run, after the host has drained.
 * @internal
 */
export function installGeneratedMembers(proto: object, withInference = true): void {
  if (withInference && !('inference' in proto)) {
    define(proto, 'inference', function inference(this: object, item: unknown, options?: RequestOptions): Promise<unknown> {
      let host: ModelHost<unknown, unknown>;
      try {
        host = hostOf(this);
      } catch (e) {
        return Promise.reject(e);
      }
      return host.inference(item, options);
    });
  }
  if (Object.prototype.hasOwnProperty.call(proto, INSTALLED)) return;
  define(proto, INSTALLED, true);
  const p = proto as Record<string | symbol, unknown>;
  const ownDispose = ownDisposer(p.dispose);
  const ownAsyncDispose = ownDisposer(p[Symbol.asyncDispose]) ?? ownDispose;
  // Zero parameters: tsyringe only calls a dispose() whose length is 0.
  const dispose = function dispose(this: object): Promise<void> {
    return close(this, ownDispose);
  };
  const asyncDispose = function asyncDispose(this: object): Promise<void> {
    return close(this, ownAsyncDispose);
  };
  generated.set(dispose, ownDispose);
  generated.set(asyncDispose, ownAsyncDispose);
  define(proto, 'dispose', dispose);
  define(proto, Symbol.asyncDispose, asyncDispose);
}
