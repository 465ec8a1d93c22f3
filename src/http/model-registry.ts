import { isError } from '../core/describe';
import { HttpError } from './http-error';
import { servedVersion } from './metadata';
import type { ServableModel } from './options';

/** A served model's state: loading, ready, or failed to load. @internal */
export type ModelEntry<T = ServableModel> =
  | { readonly state: 'loading'; readonly promise: Promise<T | undefined> }
  | { readonly state: 'ready'; readonly host: T }
  | { readonly state: 'failed'; readonly error: Error };

/**
 * How a registry recognises what it serves and reports on it: batching models and generators
 * load, fail and answer 404 or 503 the same way, and differ only here.
 * @internal
 */
export interface RegistryKind<T> {
  /** The value as a served thing, or `undefined` when it is none (it may be a promise of one); throws a TypeError for one that is malformed. */
  accept(name: string, value: unknown): T | undefined;
  /** The TypeError message for a value that is neither a served thing nor a promise. */
  invalid(name: string, value: unknown): string;
  /** The load failure's message for a promise that resolved to something else. */
  invalidResolved(name: string, value: unknown): string;
  /** The version it serves now. */
  version(value: T): string;
  /** Whether it can serve now (`false`: `'unavailable'`). */
  ready(value: T): boolean;
}

function isServable(value: unknown): value is ServableModel {
  const v = value as Partial<ServableModel> | null;
  return typeof v === 'object' && v !== null && typeof v.inference === 'function' && typeof v.stop === 'function' && Array.isArray(v.model?.inputs) && Array.isArray(v.model?.outputs);
}

/** The batching models of `models`. @internal */
export const BATCHING_MODELS: RegistryKind<ServableModel> = {
  accept: (_name, value) => (isServable(value) ? value : undefined),
  invalid: (name) => `createInferenceServer: model ${JSON.stringify(name)} must be a host with \`model\` metadata (e.g. from createOnnxHost) or a promise of one`,
  invalidResolved: (name) => `model ${JSON.stringify(name)} resolved to something that is not a host with \`model\` metadata`,
  version: servedVersion,
  ready: (host) => host.ready !== false,
};

/**
 * The models by name, each loading, ready or failed. A model given as a promise is awaited in the
 * background; a load failure is kept (and reported by `/v2/health/ready` and the model's routes), never
 * thrown, so one bad model cannot take the server down.
 * @internal
 */
export class ModelRegistry<T = ServableModel> {
  readonly #entries = new Map<string, ModelEntry<T>>();
  readonly #kind: RegistryKind<T>;
  readonly #allNames: () => string[];

  /**
   * @param allNames - every name the server serves, for the 404's list (a name this registry lacks may be in another). @default this registry's names
   */
  constructor(values: Readonly<Record<string, unknown>>, log: ((line: string) => void) | undefined, kind: RegistryKind<T>, allNames?: () => string[]) {
    this.#kind = kind;
    this.#allNames = allNames ?? (() => this.names());
    for (const [name, value] of Object.entries(values)) {
      if (name === '' || name.includes('/')) throw new TypeError(`createInferenceServer: model name ${JSON.stringify(name)} must be non-empty and contain no "/"`);
      const served = kind.accept(name, value);
      if (served !== undefined) {
        this.#entries.set(name, { state: 'ready', host: served });
        continue;
      }
      if (typeof (value as PromiseLike<unknown> | null)?.then !== 'function') throw new TypeError(kind.invalid(name, value));
      const promise = Promise.resolve(value)
        .then(
          (resolved) => {
            const host = kind.accept(name, resolved);
            if (host === undefined) throw new TypeError(kind.invalidResolved(name, resolved));
            this.#entries.set(name, { state: 'ready', host });
            return host;
          },
          (e: unknown) => {
            throw isError(e) ? e : new Error(String(e));
          },
        )
        .catch((e: Error) => {
          this.#entries.set(name, { state: 'failed', error: e });
          log?.(`microbatch http: model "${name}" failed to load: ${e.message}`);
          return undefined;
        });
      this.#entries.set(name, { state: 'loading', promise });
    }
  }

  /** The names, in the order given. */
  names(): string[] {
    return [...this.#entries.keys()];
  }

  /** Whether `name` is one of these models, in whatever state. */
  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /**
   * Each model's state. A loaded model that says it cannot serve now (`ready: false`: a remote
   * front end with no replica in sight) is `'unavailable'`: its requests are still accepted (they
   * wait for a replica), but readiness probes send traffic elsewhere.
   */
  states(): Record<string, ModelEntry['state'] | 'unavailable'> {
    return Object.fromEntries([...this.#entries].map(([name, e]) => [name, e.state === 'ready' && !this.#kind.ready(e.host) ? 'unavailable' : e.state]));
  }

  /** What `GET /v2/models` lists: each model's name, the version it serves (none until loaded) and its state. */
  listing(): Array<{ name: string; versions: string[]; state: string }> {
    const states = this.states();
    return this.names().map((name) => {
      const served = this.servedVersion(name);
      return { name, versions: served === undefined ? [] : [served], state: states[name] as string };
    });
  }

  /** The version a loaded model serves now; `undefined` while it loads or when it failed. */
  servedVersion(name: string): string | undefined {
    const entry = this.#entries.get(name);
    return entry?.state === 'ready' ? this.#kind.version(entry.host) : undefined;
  }

  /** True once every model is loaded and none says it is unavailable. */
  allReady(): boolean {
    return [...this.#entries.values()].every((e) => e.state === 'ready' && this.#kind.ready(e.host));
  }

  /**
   * The ready host named `name`, or the HTTP error to answer with: 404 for an unknown name, 503
   * while it loads or when it failed to load.
   */
  get(name: string, retryAfterSeconds: number): T {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw this.notFound(name);
    if (entry.state === 'loading') throw new HttpError(503, 'model_loading', `model ${JSON.stringify(name)} is still loading`, { 'Retry-After': String(retryAfterSeconds) });
    if (entry.state === 'failed') throw new HttpError(503, 'model_unavailable', `model ${JSON.stringify(name)} failed to load: ${entry.error.message}`);
    return entry.host;
  }

  /** The 404 for a name no registry holds, listing the served ones. */
  notFound(name: string): HttpError {
    return new HttpError(404, 'model_not_found', `no model named ${JSON.stringify(name)}; the served models are ${this.#allNames().map((n) => JSON.stringify(n)).join(', ')}`);
  }

  /** Every host, once loading ends (failed ones are left out). */
  async settled(): Promise<T[]> {
    const hosts = await Promise.all([...this.#entries.values()].map((e) => (e.state === 'loading' ? e.promise : e.state === 'ready' ? e.host : undefined)));
    return hosts.filter((h): h is Awaited<T> => h !== undefined) as T[];
  }
}
