import { describe, isError } from '../core/describe';
import { isServableWith } from '../core/servable';
import { ServingError } from './errors';
import { checkVersion } from './metadata';
import type { RepositoryControl } from './repository-control';
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
export type ServedState = 'loading' | 'ready' | 'failed' | 'unavailable';

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
 * One name's versions. A name added whole (`add`) has one entry whose version is its host's own
 * (a `ModelHost` counts its reloads); a name filled version by version (`replace`, what a model
 * repository does) has one entry per version number.
 */
interface Slot {
  readonly kind: Served['kind'];
  /** By version; a name added whole keeps its one entry under `''`. */
  readonly versions: Map<string, Entry>;
}

const WHOLE = '';

/** Versions in Triton's order: numerically when both are numbers, else as text. */
function byVersion(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  return Number.isFinite(na) && Number.isFinite(nb) && a !== '' && b !== '' ? na - nb : a.localeCompare(b);
}

/**
 * The served models and generators by name, each loading, ready or failed: the one registry of a
 * server, whatever transports it answers on. A value given as a promise is awaited in the
 * background; a load failure is kept (and reported by readiness and the name's requests), never
 * thrown, so one bad model cannot take the server down. A name may serve several versions side by
 * side (`replace`, `remove`): a request naming a version reaches it, one naming none the highest.
 *
 * @example
 * ```ts
 * const registry = new ServingRegistry('myServer');
 * registry.add('classifier', await createOnnxHost('cls.onnx', { maxBatchSize: 32 }), 'model');
 * const served = registry.get('classifier'); // { kind: 'model', host }
 * ```
 */
export class ServingRegistry {
  readonly #slots = new Map<string, Slot>();
  readonly #where: string;
  readonly #onLoadFailure: ((name: string, error: Error) => void) | undefined;
  /**
   * The model repository that fills this registry, when one does: what the repository routes of
   * every transport (index, load, unload) call.
   * @default none
   */
  repository: RepositoryControl | undefined;

  /**
   * @param where - what error messages start with (the function that was handed the values).
   * @param onLoadFailure - told when a promised value fails to load. @default none
   */
  constructor(where: string, onLoadFailure?: (name: string, error: Error) => void) {
    this.#where = where;
    this.#onLoadFailure = onLoadFailure;
  }

  #checkName(name: string): void {
    if (name === '' || name.includes('/')) throw new TypeError(`${this.#where}: model name ${JSON.stringify(name)} must be non-empty and contain no "/"`);
  }

  /**
   * Serves `value` (a servable, or a promise of one, which loads in the background) under `name`,
   * as a batching `'model'` or a `'generator'` (which may come as `{ host, tokenizer }`). Throws a
   * TypeError for a name already served, an empty one or one with a `/`, or a value of the wrong
   * shape.
   */
  add(name: string, value: unknown, kind: Served['kind']): void {
    this.#checkName(name);
    if (this.#slots.has(name)) throw new TypeError(`${this.#where}: ${JSON.stringify(name)} is served twice; a name serves one model`);
    const versions = new Map<string, Entry>();
    this.#slots.set(name, { kind, versions });
    const rules = KINDS[kind];
    const served = rules.accept(this.#where, name, value);
    if (served !== undefined) {
      versions.set(WHOLE, { kind, state: 'ready', served });
      return;
    }
    if (typeof (value as PromiseLike<unknown> | null)?.then !== 'function') {
      this.#slots.delete(name);
      throw new TypeError(rules.invalid(this.#where, name, value));
    }
    const promise = Promise.resolve(value)
      .then(
        (resolved) => {
          const loaded = rules.accept(this.#where, name, resolved);
          if (loaded === undefined) throw new TypeError(rules.invalidResolved(name, resolved));
          versions.set(WHOLE, { kind, state: 'ready', served: loaded });
          return loaded;
        },
        (e: unknown) => {
          throw isError(e) ? e : new Error(String(e));
        },
      )
      .catch((e: Error) => {
        versions.set(WHOLE, { kind, state: 'failed', error: e });
        this.#onLoadFailure?.(name, e);
        return undefined;
      });
    versions.set(WHOLE, { kind, state: 'loading', promise });
  }

  /**
   * Serves `host` as `version` of `name` (a batching `'model'`, or a `'generator'`), beside its
   * other versions, or in place of the same version (at once: a request finds the old host or the
   * new one, never neither). Throws a TypeError for a name served whole (by `add`) or as the other
   * kind, or a value that is not a host of the kind.
   */
  replace(name: string, version: string, host: InferenceServable | GenerativeServable, kind: Served['kind'] = 'model'): void {
    this.#checkName(name);
    if (version === WHOLE) throw new TypeError(`${this.#where}: model ${JSON.stringify(name)}: a version must be non-empty`);
    const slot = this.#slots.get(name);
    if (slot !== undefined && slot.versions.has(WHOLE)) throw new TypeError(`${this.#where}: ${JSON.stringify(name)} is already served whole; a name serves one model`);
    if (slot !== undefined && slot.kind !== kind) throw new TypeError(`${this.#where}: ${JSON.stringify(name)} serves a ${slot.kind}; a version of it cannot be a ${kind}`);
    const served = KINDS[kind].accept(this.#where, name, host);
    if (served === undefined) throw new TypeError(KINDS[kind].invalid(this.#where, name, host));
    const versions = slot?.versions ?? new Map<string, Entry>();
    versions.set(version, { kind, state: 'ready', served });
    if (slot === undefined) this.#slots.set(name, { kind, versions });
  }

  /**
   * Stops serving `version` of `name`, or the whole name when no version is given; the name
   * leaves with its last version. Returns whether there was something to remove. The hosts are
   * not stopped: the caller that made them does that.
   */
  remove(name: string, version?: string): boolean {
    const slot = this.#slots.get(name);
    if (slot === undefined) return false;
    if (version === undefined) return this.#slots.delete(name);
    const removed = slot.versions.delete(version);
    if (slot.versions.size === 0) this.#slots.delete(name);
    return removed;
  }

  /** The names, in the order added. */
  names(): string[] {
    return [...this.#slots.keys()];
  }

  /** What `name` serves (known while it loads, too), or `undefined` for a name not served. */
  kindOf(name: string): Served['kind'] | undefined {
    return this.#slots.get(name)?.kind;
  }

  /**
   * Each name's state: `'ready'` when any of its versions is (Triton's rule). A loaded model that
   * says it cannot serve now (`ready: false`: a remote front end with no replica in sight) is
   * `'unavailable'`: its requests are still accepted (they wait for a replica), but readiness
   * probes send traffic elsewhere.
   */
  states(): Record<string, ServedState> {
    return Object.fromEntries([...this.#slots].map(([name, slot]) => [name, slotState(slot)]));
  }

  /** What a model listing shows: each name, the versions it serves (none until loaded) and its state. */
  listing(): Array<{ name: string; versions: string[]; state: string }> {
    const states = this.states();
    return this.names().map((name) => ({ name, versions: this.versions(name), state: states[name] as string }));
  }

  /** The versions `name` serves now, ascending (none while it loads, when it failed, or for a name not served). */
  versions(name: string): string[] {
    const slot = this.#slots.get(name);
    if (slot === undefined) return [];
    return [...slot.versions]
      .flatMap(([v, e]) => (e.state !== 'ready' ? [] : [v === WHOLE ? servedVersion(e.served.host) : v]))
      .sort(byVersion);
  }

  /** The version a loaded name serves now, the highest of several; `undefined` while it loads or when it failed. */
  servedVersion(name: string): string | undefined {
    return this.versions(name).at(-1);
  }

  /** True once every name is loaded and none says it is unavailable. */
  allReady(): boolean {
    return [...this.#slots.values()].every((slot) => [...slot.versions.values()].every((e) => e.state === 'ready' && isReady(e.served)));
  }

  /**
   * What `name` serves, ready, or the error to answer with: `'not-found'` for an unknown name or
   * a version it does not serve, `'unavailable'` while it loads (retry) or when it failed to
   * load. With no `version`, the highest version serving.
   */
  get(name: string, version?: string): Served {
    const slot = this.#slots.get(name);
    if (slot === undefined) throw this.notFound(name);
    const whole = slot.versions.get(WHOLE);
    if (whole !== undefined) {
      if (whole.state === 'loading') throw new ServingError('unavailable', 'model_loading', `model ${JSON.stringify(name)} is still loading`, { retry: true });
      if (whole.state === 'failed') throw new ServingError('unavailable', 'model_unavailable', `model ${JSON.stringify(name)} failed to load: ${whole.error.message}`);
      checkVersion(name, version, servedVersion(whole.served.host));
      return whole.served;
    }
    const key = version ?? [...slot.versions.keys()].sort(byVersion).at(-1);
    const entry = key === undefined ? undefined : slot.versions.get(key);
    if (entry === undefined || entry.state !== 'ready') throw this.#versionNotFound(name, version);
    return entry.served;
  }

  /**
   * Whether `name` (at `version`, or any of its versions) can take requests now. Throws
   * `'not-found'` for an unknown name, or a version it does not serve (a name still loading
   * accepts any version: it is not known yet).
   */
  isReady(name: string, version?: string): boolean {
    const slot = this.#slots.get(name);
    if (slot === undefined) throw this.notFound(name);
    const whole = slot.versions.get(WHOLE);
    if (whole !== undefined) {
      if (whole.state === 'ready') checkVersion(name, version, servedVersion(whole.served.host));
      return whole.state === 'ready' && isReady(whole.served);
    }
    if (version === undefined) return slotState(slot) === 'ready';
    const entry = slot.versions.get(version);
    if (entry === undefined) throw this.#versionNotFound(name, version);
    return entry.state === 'ready' && isReady(entry.served);
  }

  #versionNotFound(name: string, version: string | undefined): ServingError {
    const served = this.versions(name);
    return new ServingError('not-found', 'model_version_not_found', `model ${JSON.stringify(name)} has no version ${JSON.stringify(version)}; its versions are ${served.map((v) => JSON.stringify(v)).join(', ')}`);
  }

  /** The `'not-found'` error for a name not served, listing the served ones. */
  notFound(name: string): ServingError {
    return new ServingError('not-found', 'model_not_found', `no model named ${JSON.stringify(name)}; the served models are ${this.names().map((n) => JSON.stringify(n)).join(', ')}`);
  }

  /** Everything served, every version, once loading ends (failed ones are left out). */
  async settled(): Promise<Served[]> {
    const entries = [...this.#slots.values()].flatMap((slot) => [...slot.versions.values()]);
    const all = await Promise.all(entries.map((e) => (e.state === 'loading' ? e.promise : e.state === 'ready' ? e.served : undefined)));
    return all.filter((s): s is Served => s !== undefined);
  }
}

/** A name's state from its versions' states: ready when one is ready, else the first's. */
function slotState(slot: Slot): ServedState {
  const states = [...slot.versions.values()].map((e): ServedState => (e.state === 'ready' && !isReady(e.served) ? 'unavailable' : e.state));
  return states.includes('ready') ? 'ready' : (states[0] ?? 'failed');
}

/** A generator is always ready once loaded; a model may say it is not (`ready: false`). */
function isReady(served: Served): boolean {
  return served.kind === 'generator' || served.host.ready !== false;
}
