// tsyringe refuses to load without the Reflect polyfill; importing it first is idempotent.
import 'reflect-metadata';
import { Lifecycle, type DependencyContainer, type InjectionToken } from 'tsyringe';
import { describe, toError } from '../core/describe';
import { MicrobatchError } from '../core/errors';
import { disposeInReverse } from './dispose';
import { nameOf } from './batching-metadata';

/**
 * A factory for one piece of context (the loaded model, a tokenizer...). It may be async: the
 * host awaits it once, before the model class is resolved. It receives the host's child container,
 * so it can resolve context registered before it.
 *
 * @typeParam T - what it provides.
 *
 * @example
 * ```ts
 * const load: ContextFactory<InferenceSession> = () => InferenceSession.create('model.onnx');
 * ```
 */
export type ContextFactory<T = unknown> = (container: DependencyContainer) => T | PromiseLike<T>;

/**
 * How one token of the context is provided:
 * - a plain function: a factory (sync or async), called once; the host owns and disposes its result;
 * - `{ useFactory }`: the same (called once, not per resolution as in bare tsyringe);
 * - `{ useClass }`: constructed once by the child container; the host owns and disposes it;
 * - `{ useValue }`: registered as is; the value belongs to the caller and is never disposed.
 *
 * @typeParam T - what it provides.
 *
 * @example
 * ```ts
 * const providers: Record<symbol, ContextProvider> = {
 *   [OnnxSession]: () => InferenceSession.create(bytes), // owned and released by the host
 *   [Labels]: { useValue: ['cat', 'dog'] },                 // the caller's
 * };
 * ```
 */
export type ContextProvider<T = unknown> =
  | ContextFactory<T>
  | { readonly useValue: T }
  | { readonly useFactory: ContextFactory<T> }
  | { readonly useClass: new (...args: never[]) => T };

/**
 * The `context` of `createHost`: a record `{ [token]: provider }` (string and symbol tokens), or
 * pairs `[token, provider]` (a `Map` or an array) when a token is a class. Providers are created in
 * order (for a record: JS property order, that is string keys, then symbols) and disposed in
 * reverse order.
 *
 * @example
 * ```ts
 * const context: ContextProviders = { [OnnxSession]: () => InferenceSession.create(bytes) };
 * const pairs: ContextProviders = new Map([[Tokenizer, { useClass: WordPieceTokenizer }]]);
 * ```
 */
export type ContextProviders =
  | { readonly [token: string | symbol]: ContextProvider }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a token of any provided type
  | Iterable<readonly [InjectionToken<any>, ContextProvider]>;

/**
 * A context provider failed (threw, rejected, or could not be constructed). `createHost` rejects
 * with it after releasing the context created before; `cause` is the provider's own error.
 *
 * @example
 * ```ts
 * await createHost(Classifier, { context: { [OnnxSession]: () => InferenceSession.create('missing.onnx') } })
 *   .catch((e) => { if (e instanceof ContextProviderError) console.error(e.token, e.cause); });
 * ```
 */
export class ContextProviderError extends MicrobatchError {
  /** The token whose provider failed. */
  readonly token: InjectionToken<unknown>;
  constructor(where: string, token: InjectionToken<unknown>, cause: unknown) {
    super(`${where}: the context provider for ${describeToken(token)} failed: ${toError(cause, 'The provider').message}`, { cause });
    this.token = token;
  }
}

/** A token as a message shows it. @internal */
function describeToken(token: unknown): string {
  if (typeof token === 'symbol') return token.toString();
  if (typeof token === 'string') return JSON.stringify(token);
  if (typeof token === 'function') return `class ${token.name || '(anonymous)'}`;
  return describe(token);
}

/** The loaded context: the child container and what it owns, in creation order. @internal */
export interface LoadedContext {
  readonly container: DependencyContainer;
  /** Values the host created (factory results, useClass instances), oldest first. */
  readonly owned: unknown[];
}

function entriesOf(context: ContextProviders, where: string): Array<readonly [InjectionToken<unknown>, unknown]> {
  if (typeof context !== 'object' || context === null) {
    throw new TypeError(`${where}: expected \`context\` to be a record { [token]: provider } or [token, provider] pairs, got ${describe(context)}`);
  }
  if (Symbol.iterator in context) return [...(context as Iterable<readonly [InjectionToken<unknown>, unknown]>)];
  const record = context as Record<string | symbol, unknown>;
  return Reflect.ownKeys(record).map((k) => [k, record[k]] as const);
}

function isClass(fn: unknown): boolean {
  return typeof fn === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

type Normalized = { kind: 'factory'; make: ContextFactory } | { kind: 'value'; value: unknown } | { kind: 'class'; useClass: new () => unknown };

/** Checks a provider's shape before anything is created, so typos fail fast and cheaply. */
function normalize(provider: unknown, token: unknown, where: string): Normalized {
  const bad = (why: string): never => {
    throw new TypeError(
      `${where}: the context provider for ${describeToken(token)} ${why}; expected a factory function, ` +
        '{ useValue }, { useFactory } or { useClass }',
    );
  };
  if (isClass(provider)) bad(`is a class (${describeToken(provider)}): write { useClass: ${(provider as { name: string }).name} } to construct it`);
  if (typeof provider === 'function') return { kind: 'factory', make: provider as ContextFactory };
  if (typeof provider !== 'object' || provider === null) return bad(`is ${describe(provider)}`);
  const keys = Object.keys(provider).filter((k) => k === 'useValue' || k === 'useFactory' || k === 'useClass');
  if (keys.length !== 1) bad(`has ${keys.length === 0 ? 'none' : 'more than one'} of useValue, useFactory, useClass`);
  const p = provider as { useValue?: unknown; useFactory?: unknown; useClass?: unknown };
  if ('useValue' in p) return { kind: 'value', value: p.useValue };
  if ('useFactory' in p) {
    if (typeof p.useFactory !== 'function') bad(`has a useFactory that is ${describe(p.useFactory)}`);
    return { kind: 'factory', make: p.useFactory as ContextFactory };
  }
  if (typeof p.useClass !== 'function') bad(`has a useClass that is ${describe(p.useClass)}`);
  return { kind: 'class', useClass: p.useClass as new () => unknown };
}

/**
 * Creates a child of `parent`, registers the context in it and creates every provided value in
 * order, awaiting async factories one after another (a provider may use the ones before it). On
 * failure, releases what was already created and throws a {@link ContextProviderError}. The
 * parent is never written to. @internal
 */
export async function loadContext(parent: DependencyContainer, context: ContextProviders | undefined, where: string): Promise<LoadedContext> {
  const entries = context === undefined ? [] : entriesOf(context, where);
  const normalized = entries.map(([token, provider]) => [token, normalize(provider, token, where)] as const);
  const container = parent.createChildContainer();
  const owned: unknown[] = [];
  let token: InjectionToken<unknown> | undefined;
  try {
    for (const [t, p] of normalized) {
      token = t;
      if (p.kind === 'value') {
        container.register(t, { useValue: p.value });
      } else if (p.kind === 'factory') {
        const value = await p.make(container);
        owned.push(value);
        container.register(t, { useValue: value });
      } else {
        // Built now, at its turn, by the child container (so its own @inject parameters resolve
        // from the context listed before it), and cached there: one instance per host.
        container.register(t, { useClass: p.useClass }, { lifecycle: Lifecycle.ContainerScoped });
        owned.push(container.resolve(t));
      }
    }
  } catch (e) {
    await releaseContext({ container, owned }, where).catch((cleanup: unknown) => {
      process.emitWarning(`${where}: releasing the context after a failed provider also failed: ${toError(cleanup, 'release').message}`);
    });
    throw new ContextProviderError(where, token as InjectionToken<unknown>, e);
  }
  return { container, owned };
}

/**
 * Releases the owned values in reverse order, then disposes the child container so that it
 * refuses further use and releases what tsyringe itself built along the way (transient
 * dependencies with a `dispose()`). `first` values (the model instance) are released before the
 * context they were built from. @internal
 */
export async function releaseContext(loaded: LoadedContext, where: string, first: readonly unknown[] = []): Promise<void> {
  let released: unknown[];
  let failure: unknown;
  try {
    released = await disposeInReverse([...loaded.owned, ...first], where);
  } catch (e) {
    failure = e;
    released = [...loaded.owned, ...first];
  }
  // tsyringe's dispose() calls dispose() on every instance it constructed, which would release
  // again what was released above (an onnxruntime session throws on a second release). Its set of
  // tracked instances is internal; when it has the expected shape, drop what was handled here.
  const tracked = (loaded.container as unknown as { disposables?: unknown }).disposables;
  if (tracked instanceof Set) {
    for (const v of released) tracked.delete(v);
    await loaded.container.dispose();
  }
  if (failure !== undefined) throw failure;
}

/**
 * Creates the context in a child of `parent` and resolves `Class` there: what an inline host of a
 * decorated class is built from. A class that cannot be resolved releases the context and fails
 * with a message that says how to inject its parameters. @internal
 */
export async function resolveInContext<T>(
  parent: DependencyContainer,
  Class: new (...args: never[]) => T,
  context: ContextProviders | undefined,
  where: string,
): Promise<{ loaded: LoadedContext; instance: T }> {
  const loaded = await loadContext(parent, context, where);
  try {
    return { loaded, instance: loaded.container.resolve(Class as unknown as InjectionToken<T>) };
  } catch (e) {
    await releaseContext(loaded, where).catch(() => undefined);
    throw new Error(
      `${where}: could not resolve ${nameOf(Class)} from the container: ${(e as Error).message}. Mark it @injectable() and ` +
        'give every constructor parameter a context token with @inject(token)',
      { cause: e },
    );
  }
}
