import { describe, isError } from '../core/describe';
import { isServableWith } from '../core/servable';
import { ServingError } from './errors';
import { servedVersion, type GenerativeServable, type InferenceServable, type Tokenizer } from './servables';

/** What a registry serves under a name: a batching model, or a generator with its tokenizer. */
export type Served =
  | { readonly kind: 'model'; readonly host: InferenceServable }
  | { readonly kind: 'generator'; readonly host: GenerativeServable; readonly tokenizer?: Tokenizer };

/** A served name's state: loading, ready, or failed to load. */
type Entry =
  | { readonly kind: Served['kind']; readonly state: 'loading'; readonly promise: Promise<Served | undefined> }
  | { readonly kind: Served['kind']; readonly state: 'ready'; readonly served: Served }
  | { readonly kind: Served['kind']; readonly state: 'failed'; readonly error: Error };

/** The state of a served name: `'unavailable'` is a loaded one that says it cannot serve now. */
export type ServedState = Entry['state'] | 'unavailable';

/**
 * How the registry recognises each kind: batching models and generators load, fail and answer
 * `'not-found'` or `'unavailable'` the same way, and differ only here.
 */
interface KindRules {
  /** The value as a served thing, or `undefined` when it is none (it may be a promise of one); throws a TypeError for one that is malformed. */
  accept(where: string, name: string, value: unknown): Served | undefined;
  /** The TypeError message for a value that is neither a served thing nor a promise. */
  invalid(where: string, name: string, value: unknown): string;
  /** The load failure's message for a promise that resolved to something else. */
  invalidResolved(name: string, value: unknown): string;
}

function isInferenceServable(value: unknown): value is InferenceServable {
  return isServableWith(value, ['inference', 'stop', 'model']) && Array.isArray(value.model.inputs) && Array.isArray(value.model.outputs);
}

const GENERATOR_SHAPE = 'a GenerationHost (with generate() and stop()) or { host, tokenizer? }';

const KINDS: Readonly<Record<Served['kind'], KindRules>> = {
  model: {
    accept: (_where, _name, value) => (isInferenceServable(value) ? { kind: 'model', host: value } : undefined),
    invalid: (where, name, value) => `${where}: model ${JSON.stringify(name)} must be a host with \`model\` metadata (e.g. from createOnnxHost) or a promise of one; got ${describe(value)}`,
    invalidResolved: (name) => `model ${JSON.stringify(name)} resolved to something that is not a host with \`model\` metadata`,
  },
  generator: {
    accept(where, name, value) {
      if (isServableWith(value, ['generate', 'stop'])) return { kind: 'generator', host: value };
      const entry = value as { host?: unknown; tokenizer?: Tokenizer } | null;
      if (typeof entry !== 'object' || entry === null || !isServableWith(entry.host, ['generate', 'stop'])) return undefined;
      const t = entry.tokenizer;
      if (t !== undefined && (typeof t !== 'object' || t === null || typeof t.encode !== 'function' || typeof t.decode !== 'function')) {
        throw new TypeError(`${where}: generator ${JSON.stringify(name)}: expected \`tokenizer\` to be { encode(text), decode(tokens) }, got ${describe(t)}`);
      }
      return t === undefined ? { kind: 'generator', host: entry.host } : { kind: 'generator', host: entry.host, tokenizer: t };
    },
    invalid: (where, name, value) => `${where}: generator ${JSON.stringify(name)} must be a GenerationHost (with generate() and stop()), { host, tokenizer? }, or a promise of either; got ${describe(value)}`,
    invalidResolved: (name, value) => `generator ${JSON.stringify(name)} resolved to ${describe(value)}, not ${GENERATOR_SHAPE}`,
  },
};

/**
 * The served models and generators by name, each loading, ready or failed: the one registry of a
 * server, whatever transports it answers on. A value given as a promise is awaited in the
 * background; a load failure is kept (and reported by readiness and the name's requests), never
 * thrown, so one bad model cannot take the server down.
 *
 * @example
 * ```ts
 * const registry = new ServingRegistry('myServer');
 * registry.add('classifier', await createOnnxHost('cls.onnx', { maxBatchSize: 32 }), 'model');
 * const served = registry.get('classifier'); // { kind: 'model', host }
 * ```
 */
export class ServingRegistry {
  readonly #entries = new Map<string, Entry>();
  readonly #where: string;
  readonly #onLoadFailure: ((name: string, error: Error) => void) | undefined;

  /**
   * @param where - what error messages start with (the function that was handed the values).
   * @param onLoadFailure - told when a promised value fails to load. @default none
   */
  constructor(where: string, onLoadFailure?: (name: string, error: Error) => void) {
    this.#where = where;
    this.#onLoadFailure = onLoadFailure;
  }

  /**
   * Serves `value` (a servable, or a promise of one, which loads in the background) under `name`,
   * as a batching `'model'` or a `'generator'` (which may come as `{ host, tokenizer }`). Throws a
   * TypeError for a name already served, an empty one or one with a `/`, or a value of the wrong
   * shape.
   */
  add(name: string, value: unknown, kind: Served['kind']): void {
    if (name === '' || name.includes('/')) throw new TypeError(`${this.#where}: model name ${JSON.stringify(name)} must be non-empty and contain no "/"`);
    if (this.#entries.has(name)) throw new TypeError(`${this.#where}: ${JSON.stringify(name)} is served twice; a name serves one model`);
    const rules = KINDS[kind];
    const served = rules.accept(this.#where, name, value);
    if (served !== undefined) {
      this.#entries.set(name, { kind, state: 'ready', served });
      return;
    }
    if (typeof (value as PromiseLike<unknown> | null)?.then !== 'function') throw new TypeError(rules.invalid(this.#where, name, value));
    const promise = Promise.resolve(value)
      .then(
        (resolved) => {
          const loaded = rules.accept(this.#where, name, resolved);
          if (loaded === undefined) throw new TypeError(rules.invalidResolved(name, resolved));
          this.#entries.set(name, { kind, state: 'ready', served: loaded });
          return loaded;
        },
        (e: unknown) => {
          throw isError(e) ? e : new Error(String(e));
        },
      )
      .catch((e: Error) => {
        this.#entries.set(name, { kind, state: 'failed', error: e });
        this.#onLoadFailure?.(name, e);
        return undefined;
      });
    this.#entries.set(name, { kind, state: 'loading', promise });
  }

  /** The names, in the order added. */
  names(): string[] {
    return [...this.#entries.keys()];
  }

  /** What `name` serves (known while it loads, too), or `undefined` for a name not served. */
  kindOf(name: string): Served['kind'] | undefined {
    return this.#entries.get(name)?.kind;
  }

  /**
   * Each name's state. A loaded model that says it cannot serve now (`ready: false`: a remote
   * front end with no replica in sight) is `'unavailable'`: its requests are still accepted (they
   * wait for a replica), but readiness probes send traffic elsewhere.
   */
  states(): Record<string, ServedState> {
    return Object.fromEntries([...this.#entries].map(([name, e]) => [name, e.state === 'ready' && !isReady(e.served) ? 'unavailable' : e.state]));
  }

  /** What a model listing shows: each name, the version it serves (none until loaded) and its state. */
  listing(): Array<{ name: string; versions: string[]; state: string }> {
    const states = this.states();
    return this.names().map((name) => {
      const served = this.servedVersion(name);
      return { name, versions: served === undefined ? [] : [served], state: states[name] as string };
    });
  }

  /** The version a loaded name serves now; `undefined` while it loads or when it failed. */
  servedVersion(name: string): string | undefined {
    const entry = this.#entries.get(name);
    return entry?.state === 'ready' ? servedVersion(entry.served.host) : undefined;
  }

  /** True once every name is loaded and none says it is unavailable. */
  allReady(): boolean {
    return [...this.#entries.values()].every((e) => e.state === 'ready' && isReady(e.served));
  }

  /**
   * What `name` serves, ready, or the error to answer with: `'not-found'` for an unknown name,
   * `'unavailable'` while it loads (retry) or when it failed to load.
   */
  get(name: string): Served {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw this.notFound(name);
    if (entry.state === 'loading') throw new ServingError('unavailable', 'model_loading', `model ${JSON.stringify(name)} is still loading`, { retry: true });
    if (entry.state === 'failed') throw new ServingError('unavailable', 'model_unavailable', `model ${JSON.stringify(name)} failed to load: ${entry.error.message}`);
    return entry.served;
  }

  /** The `'not-found'` error for a name not served, listing the served ones. */
  notFound(name: string): ServingError {
    return new ServingError('not-found', 'model_not_found', `no model named ${JSON.stringify(name)}; the served models are ${this.names().map((n) => JSON.stringify(n)).join(', ')}`);
  }

  /** Everything served, once loading ends (failed ones are left out). */
  async settled(): Promise<Served[]> {
    const all = await Promise.all([...this.#entries.values()].map((e) => (e.state === 'loading' ? e.promise : e.state === 'ready' ? e.served : undefined)));
    return all.filter((s): s is Served => s !== undefined);
  }
}

/** A generator is always ready once loaded; a model may say it is not (`ready: false`). */
function isReady(served: Served): boolean {
  return served.kind === 'generator' || served.host.ready !== false;
}
