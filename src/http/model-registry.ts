import { isError } from '../core/describe';
import { HttpError } from './http-error';
import { servedVersion } from './metadata';
import type { ServableModel } from './options';

/** A served model's state: loading, ready, or failed to load. @internal */
export type ModelEntry =
  | { readonly state: 'loading'; readonly promise: Promise<ServableModel | undefined> }
  | { readonly state: 'ready'; readonly host: ServableModel }
  | { readonly state: 'failed'; readonly error: Error };

function isServable(value: unknown): value is ServableModel {
  const v = value as Partial<ServableModel> | null;
  return typeof v === 'object' && v !== null && typeof v.inference === 'function' && typeof v.stop === 'function' && Array.isArray(v.model?.inputs) && Array.isArray(v.model?.outputs);
}

/**
 * The models by name, each loading, ready or failed. A model given as a promise is awaited in the
 * background; a load failure is kept (and reported by `/v2/health/ready` and the model's routes), never
 * thrown, so one bad model cannot take the server down.
 * @internal
 */
export class ModelRegistry {
  readonly #entries = new Map<string, ModelEntry>();

  constructor(models: Readonly<Record<string, ServableModel | PromiseLike<ServableModel>>>, log: ((line: string) => void) | undefined, allowEmpty = false) {
    if (typeof models !== 'object' || models === null || (Object.keys(models).length === 0 && !allowEmpty)) {
      throw new TypeError('createInferenceServer: expected `models` to be an object { name: host } with at least one model (or `generators` with one)');
    }
    for (const [name, value] of Object.entries(models)) {
      if (name === '' || name.includes('/')) throw new TypeError(`createInferenceServer: model name ${JSON.stringify(name)} must be non-empty and contain no "/"`);
      if (isServable(value)) {
        this.#entries.set(name, { state: 'ready', host: value });
        continue;
      }
      if (typeof (value as PromiseLike<unknown> | null)?.then !== 'function') {
        throw new TypeError(`createInferenceServer: model ${JSON.stringify(name)} must be a host with \`model\` metadata (e.g. from createOnnxHost) or a promise of one`);
      }
      const promise = Promise.resolve(value).then(
        (host) => {
          if (!isServable(host)) throw new TypeError(`model ${JSON.stringify(name)} resolved to something that is not a host with \`model\` metadata`);
          this.#entries.set(name, { state: 'ready', host });
          return host;
        },
        (e: unknown) => {
          throw isError(e) ? e : new Error(String(e));
        },
      ).catch((e: Error) => {
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

  /**
   * Each model's state. A loaded model that says it cannot serve now (`ready: false`: a remote
   * front end with no replica in sight) is `'unavailable'`: its requests are still accepted (they
   * wait for a replica), but readiness probes send traffic elsewhere.
   */
  states(): Record<string, ModelEntry['state'] | 'unavailable'> {
    return Object.fromEntries([...this.#entries].map(([name, e]) => [name, e.state === 'ready' && e.host.ready === false ? 'unavailable' : e.state]));
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
    return entry?.state === 'ready' ? servedVersion(entry.host) : undefined;
  }

  /** True once every model is loaded and none says it is unavailable. */
  allReady(): boolean {
    return [...this.#entries.values()].every((e) => e.state === 'ready' && e.host.ready !== false);
  }

  /**
   * The ready host named `name`, or the HTTP error to answer with: 404 for an unknown name, 503
   * while it loads or when it failed to load.
   */
  get(name: string, retryAfterSeconds: number): ServableModel {
    const entry = this.#entries.get(name);
    if (entry === undefined) {
      throw new HttpError(404, 'model_not_found', `no model named ${JSON.stringify(name)}; the served models are ${this.names().map((n) => JSON.stringify(n)).join(', ')}`);
    }
    if (entry.state === 'loading') throw new HttpError(503, 'model_loading', `model ${JSON.stringify(name)} is still loading`, { 'Retry-After': String(retryAfterSeconds) });
    if (entry.state === 'failed') throw new HttpError(503, 'model_unavailable', `model ${JSON.stringify(name)} failed to load: ${entry.error.message}`);
    return entry.host;
  }

  /** Every host, once loading ends (failed ones are left out). */
  async settled(): Promise<ServableModel[]> {
    const hosts = await Promise.all([...this.#entries.values()].map((e) => (e.state === 'loading' ? e.promise : e.state === 'ready' ? e.host : undefined)));
    return hosts.filter((h): h is ServableModel => h !== undefined);
  }
}
