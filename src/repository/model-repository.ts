import { join, resolve } from 'node:path';
import { existsSync, statSync } from 'node:fs';
import { isError } from '../core/describe';
import { createOnnxHost, type OnnxHostOptions } from '../onnx';
import { ServingError, ServingRegistry, type InferenceServable, type RepositoryControl, type RepositoryIndexEntry, type ServingCore } from '../serving';
import { readJsonConfig, type TritonModelConfig } from './config-schema';
import { configInForce, modelSettings, signatureMisfit, type ModelSettings, type RepositoryHostDefaults } from './model-settings';
import { versionedHost } from './versioned-host';
import { createDecoderHost } from './decoder-host';
import { configFile, fingerprint, listModelFolders, listVersions, readConfigFile, selectVersions } from './scan';

/** Which models a repository serves and when that changes (Triton's `--model-control-mode`). */
export type ModelControlMode = 'none' | 'poll' | 'explicit';

/** The model control modes, in the order the help lists them. */
export const MODEL_CONTROL_MODES: readonly ModelControlMode[] = ['none', 'poll', 'explicit'];

/** Options of {@link ModelRepository}. */
export interface ModelRepositoryOptions {
  /**
   * `'none'`: every model is loaded at `start()` and the repository is not read again; load and
   * unload requests are refused. `'poll'`: the same at start, then the folder is read every
   * `pollIntervalMs`: new models and version folders are loaded, removed ones unloaded, changed
   * configs reloaded. `'explicit'`: only `loadModels` at start; then load and unload requests.
   * @default 'none'
   */
  modelControlMode?: ModelControlMode;
  /** With `'explicit'`: the models loaded at `start()` (`'*'`: all). @default none */
  loadModels?: readonly string[];
  /** With `'poll'`: how often the folder is read. @default 15000 (Triton's 15 s) */
  pollIntervalMs?: number;
  /** Host options where a model's config says nothing; `maxBatchSize` is required. */
  defaults: RepositoryHostDefaults;
  /**
   * How long a version taken out of service keeps its host before `stop({ drain: true })`, so a
   * request that picked the version just before its removal still reaches it.
   * @default 1000
   */
  retireAfterMs?: number;
  /** Told about warnings (once each) and load failures. @default none */
  log?: (level: 'info' | 'warn' | 'error', line: string) => void;
  /** Makes a version's host (for tests and custom loading). @default `createOnnxHost` */
  createHost?: (modelPath: string, options: OnnxHostOptions & { workers: number }) => Promise<InferenceServable>;
}

/** One served or failed version. */
interface Version {
  state: 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';
  reason: string;
  host?: InferenceServable;
  /** The config and model file the host was made from: a load with the same keeps it. */
  key?: string;
  /** A batching model, or a decoder served as a generator. @default 'model' */
  kind?: 'model' | 'generator';
}

/** What the repository knows of one model folder. */
interface Model {
  /** Whether a load was ever asked for (a model never loaded shows in the index by name only). */
  loaded: boolean;
  /** A failure of the model as a whole (its config), or `''`. */
  reason: string;
  /** What the last load failed on (its config, or versions that did not load), or `''`: a load request answers with it. */
  failed: string;
  state: 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING' | undefined;
  versions: Map<number, Version>;
  /** The files of the last load, to skip a load that would change nothing. */
  fingerprint: string | undefined;
  /** Operations on this model run one after another. */
  queue: Promise<void>;
}

const MODEL_NAME = /^[^/\\]+$/;

/**
 * A Triton model repository served through a {@link ServingRegistry}: each model folder's config
 * (`config.pbtxt` or `config.json`) sets its batching, each served version folder gets its own
 * host, registered under the model's name and the version's number. Protocol-neutral: the HTTP
 * server's `/v2/repository/...` routes call {@link ModelRepository.index}, `load` and `unload`.
 *
 * @example
 * ```ts
 * const core = createServingCore({ filledLater: true });
 * const repository = new ModelRepository('models', core, { defaults: { maxBatchSize: 32 } });
 * await repository.start(); // every model loaded (mode 'none')
 * ```
 */
export class ModelRepository implements RepositoryControl {
  readonly dir: string;
  readonly mode: ModelControlMode;
  readonly #registry: ServingRegistry;
  readonly #options: ModelRepositoryOptions;
  readonly #models = new Map<string, Model>();
  readonly #warned = new Set<string>();
  readonly #retiring = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * @param dir - the repository folder: one sub-folder per model.
   * @param core - the serving core (or its registry) whose models the repository fills; make it with `filledLater: true`.
   * @param options - the model control mode and the host defaults; see {@link ModelRepositoryOptions}.
   */
  constructor(dir: string, core: ServingCore | ServingRegistry, options: ModelRepositoryOptions) {
    const where = 'ModelRepository';
    const registry = core instanceof ServingRegistry ? core : core.registry;
    this.dir = resolve(dir);
    if (!existsSync(this.dir) || !statSync(this.dir).isDirectory()) throw new TypeError(`${where}: expected a model repository folder, got ${JSON.stringify(dir)} (not a folder)`);
    const mode = options.modelControlMode ?? 'none';
    if (!MODEL_CONTROL_MODES.includes(mode)) throw new TypeError(`${where}: modelControlMode must be one of ${MODEL_CONTROL_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
    if ((options.loadModels ?? []).length > 0 && mode !== 'explicit') throw new TypeError(`${where}: loadModels needs modelControlMode 'explicit' (in '${mode}' every model loads at start)`);
    const poll = options.pollIntervalMs;
    if (poll !== undefined && (!Number.isFinite(poll) || poll <= 0)) throw new RangeError(`${where}: pollIntervalMs must be a number > 0, got ${String(poll)}`);
    this.mode = mode;
    this.#registry = registry;
    this.#options = options;
    registry.repository = this;
  }

  /** Loads the models the mode starts with (all, or `loadModels`), then starts polling in `'poll'` mode. */
  async start(): Promise<void> {
    const wanted = this.mode === 'explicit' ? (this.#options.loadModels ?? []) : ['*'];
    const names = wanted.includes('*') ? listModelFolders(this.dir) : [...wanted];
    // A model asked for by name must be there: a typo fails the start, as in Triton.
    for (const name of names) this.#checkName(name);
    for (const name of names) this.#model(name);
    for (const name of listModelFolders(this.dir)) this.#model(name);
    // One after another, in name order: a registry lists models in the order they came, and
    // loading several models at once would only compete for the same cores.
    for (const name of names) await this.#run(name, () => this.#load(name, true));
    if (this.mode === 'poll') this.#schedulePoll();
  }

  /** Every model folder and every model loaded: by name only when never loaded, else one row per version (Triton's repository index). */
  index(options: { ready?: boolean } = {}): RepositoryIndexEntry[] {
    for (const name of this.#safeList()) this.#model(name);
    const rows: RepositoryIndexEntry[] = [];
    for (const [name, m] of [...this.#models].sort(([a], [b]) => a.localeCompare(b))) {
      if (!m.loaded) {
        if (options.ready !== true) rows.push({ name });
        continue;
      }
      if (m.versions.size === 0 || m.reason !== '') {
        if (options.ready !== true) rows.push({ name, state: m.state ?? 'UNAVAILABLE', reason: m.reason });
        if (m.versions.size === 0) continue;
      }
      for (const [v, version] of [...m.versions].sort(([a], [b]) => a - b)) {
        if (options.ready === true && version.state !== 'READY') continue;
        rows.push({ name, version: String(v), state: version.state, reason: version.reason });
      }
    }
    return rows;
  }

  /**
   * Loads `name` (explicit mode only): reads its config and version folders again and serves
   * what they say. A loaded model whose files changed is reloaded (its old versions serve until the
   * new ones are ready); an unchanged one is left as it is. Resolves once loaded; a model that
   * fails to load is left UNAVAILABLE with the reason, and the promise rejects with it.
   *
   * @param options.config - a config in Triton's JSON form that replaces the model's config file
   * for this load (Triton's load `config` parameter); the next load without it reads the file again.
   * @default the model's config file
   */
  async load(name: string, options: { readonly config?: string } = {}): Promise<void> {
    this.#checkControl('load');
    this.#checkName(name);
    if (options.config !== undefined && typeof options.config !== 'string') throw new ServingError('invalid-argument', 'bad_config', `a config override must be a string of JSON, got ${typeof options.config}`);
    await this.#run(name, () => this.#load(name, true, options.config));
    const m = this.#models.get(name) as Model;
    // A failed reload keeps the old versions serving, and still fails the request that asked for it.
    if (m.state !== 'READY' || m.failed !== '') throw new ServingError('invalid-argument', 'load_failed', `load failed for model ${JSON.stringify(name)}: ${m.failed || this.#versionReasons(m)}`);
  }

  /** Unloads `name` (explicit mode only): its versions leave the registry, and each host answers its queued requests, then stops. */
  async unload(name: string): Promise<void> {
    this.#checkControl('unload');
    this.#checkName(name);
    await this.#run(name, () => this.#unload(name));
  }

  /** Reads the folder once as a poll does: loads new models and versions, unloads removed ones, reloads changed ones. */
  async poll(): Promise<void> {
    const present = this.#safeList();
    const known = [...this.#models.keys()];
    await Promise.all([
      ...present.map((name) => this.#run(name, () => this.#load(name))),
      ...known.filter((name) => !present.includes(name)).map((name) => this.#run(name, () => this.#unload(name, true))),
    ]);
  }

  /** Stops polling and waits for retiring hosts; the registry's owner stops the hosts still served. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await Promise.all([...this.#models.values()].map((m) => m.queue));
    await Promise.all([...this.#retiring]);
  }

  #schedulePoll(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.poll()
        .catch((e: unknown) => this.#log('error', `microbatch repository: poll failed: ${isError(e) ? e.message : String(e)}`))
        .finally(() => this.#schedulePoll());
    }, this.#options.pollIntervalMs ?? 15_000);
    this.#timer.unref();
  }

  #safeList(): string[] {
    try {
      return listModelFolders(this.dir);
    } catch (e) {
      this.#log('error', `microbatch repository: cannot read ${this.dir}: ${isError(e) ? e.message : String(e)}`);
      return [...this.#models.keys()];
    }
  }

  #checkControl(action: string): void {
    if (this.mode !== 'explicit') {
      throw new ServingError('unavailable', 'model_control_disabled', `cannot ${action} models: the repository's model control mode is '${this.mode}'; ${action} requests need --model-control-mode explicit`);
    }
  }

  #checkName(name: string): void {
    if (!MODEL_NAME.test(name) || name === '..' || name === '.') throw new ServingError('invalid-argument', 'bad_model_name', `model name ${JSON.stringify(name)} must be a folder name (non-empty, no "/")`);
    if (!existsSync(join(this.dir, name))) {
      throw new ServingError('not-found', 'model_not_found', `no model ${JSON.stringify(name)} in the repository ${this.dir}; its models are ${listModelFolders(this.dir).map((n) => JSON.stringify(n)).join(', ') || 'none'}`);
    }
  }

  #model(name: string): Model {
    let m = this.#models.get(name);
    if (m === undefined) {
      m = { loaded: false, reason: '', failed: '', state: undefined, versions: new Map(), fingerprint: undefined, queue: Promise.resolve() };
      this.#models.set(name, m);
    }
    return m;
  }

  /** Runs `op` after the model's earlier operations. */
  #run(name: string, op: () => Promise<void>): Promise<void> {
    const m = this.#model(name);
    const next = m.queue.then(op, op);
    m.queue = next.catch(() => undefined);
    return next;
  }

  #log(level: 'info' | 'warn' | 'error', line: string): void {
    this.#options.log?.(level, line);
  }

  #warnOnce(line: string): void {
    if (this.#warned.has(line)) return;
    this.#warned.add(line);
    this.#log('warn', `microbatch repository: ${line}`);
  }

  #versionReasons(m: Model): string {
    return [...m.versions].filter(([, v]) => v.reason !== '').map(([n, v]) => `version ${n}: ${v.reason}`).join('; ') || 'no version was found to serve';
  }

  /** Loads or reloads `name`; without `force` (a poll) only when its files changed since the last try. */
  async #load(name: string, force = false, override?: string): Promise<void> {
    const m = this.#model(name);
    const dir = join(this.dir, name);
    let stamp: string;
    try {
      stamp = fingerprint(dir);
    } catch {
      return; // the folder went away meanwhile: the next poll unloads it
    }
    if (m.loaded && !force && stamp === m.fingerprint) return;
    m.loaded = true;
    m.fingerprint = stamp;
    let settings: ModelSettings;
    let served: number[];
    let configKey: string;
    let config: TritonModelConfig;
    try {
      const file = configFile(dir);
      const read = override === undefined ? readConfigFile(file) : readJsonConfig(override, `the load request's config for "${name}"`);
      settings = modelSettings(read.config, file ?? join(dir, 'config.pbtxt'), name, this.#options.defaults);
      for (const w of [...read.warnings, ...settings.warnings]) this.#warnOnce(w);
      const selection = selectVersions(listVersions(dir), settings.versionPolicy);
      for (const v of selection.missing) this.#warnOnce(`model "${name}": version ${v} named by version_policy has no folder; skipped`);
      served = selection.served;
      configKey = JSON.stringify(read.config);
      if (served.length === 0) throw new Error(`no version folder (a number, holding ${settings.modelFile}) to serve under its version policy in ${dir}`);
      m.state = m.versions.size > 0 ? m.state : 'LOADING';
      config = read.config;
    } catch (e) {
      m.reason = isError(e) ? e.message : String(e);
      m.failed = m.reason;
      // A failed reload keeps the versions serving; a first load leaves the model UNAVAILABLE.
      if (![...m.versions.values()].some((v) => v.state === 'READY')) m.state = 'UNAVAILABLE';
      this.#log('error', `microbatch repository: model "${name}" failed to load: ${m.reason}`);
      return;
    }
    m.reason = '';
    const failures: string[] = [];
    const inForce = configInForce(config, settings);
    const made: Array<[number, Version]> = [];
    for (const v of served) {
      const path = join(dir, String(v), settings.modelFile);
      const key = `${configKey}|${stamp.split('|').find((s) => s.startsWith(`${v}=`)) ?? ''}`;
      const old = m.versions.get(v);
      if (old?.state === 'READY' && old.key === key) continue;
      if (old === undefined) m.versions.set(v, { state: 'LOADING', reason: '' });
      try {
        // Each version's host has its own name: statistics and metrics are kept by host name.
        const hostName = `${name}/${v}`;
        if (settings.decoder !== undefined) {
          const h = settings.host;
          const generator = await createDecoderHost(path, { maxBatchSize: h.maxBatchSize, name: hostName, maxQueueSize: h.maxQueueSize, timeoutMs: h.timeoutMs, threads: h.threads }, settings.decoder);
          made.push([v, { state: 'READY', reason: '', host: versionedHost(generator as InferenceServable, String(v)), key, kind: 'generator' }]);
          continue;
        }
        const host = await (this.#options.createHost ?? createOnnxHost)(path, { ...settings.host, name: hostName });
        const misfit = signatureMisfit(config, host.model);
        if (misfit !== undefined) {
          await host.stop({ drain: false }).catch(() => undefined);
          throw new Error(`the config does not match the model: ${misfit}`);
        }
        made.push([v, { state: 'READY', reason: '', host: versionedHost(host, String(v), { servedVersions: () => this.#registry.versions(name), config: inForce }), key }]);
      } catch (e) {
        const reason = isError(e) ? e.message : String(e);
        failures.push(`version ${v}: ${reason}`);
        this.#log('error', `microbatch repository: model "${name}" version ${v} failed to load: ${reason}`);
        // A version that serves keeps serving; one that never did is UNAVAILABLE.
        if (old?.state !== 'READY') m.versions.set(v, { state: 'UNAVAILABLE', reason });
      }
    }
    // New versions are registered before old ones leave, so a request always finds one.
    for (const [v, version] of made) {
      const old = m.versions.get(v);
      this.#registry.replace(name, String(v), version.host as InferenceServable, version.kind);
      m.versions.set(v, version);
      if (old?.host !== undefined) void this.#retire(old.host);
    }
    // A version leaving the policy goes; but while a version meant to replace it failed (a file
    // still being copied in, say), one whose folder is still there keeps serving, as Triton keeps
    // the old model on a failed reload. Its folder gone, it goes regardless.
    const allServe = served.every((v) => m.versions.get(v)?.state === 'READY');
    for (const [v, version] of [...m.versions]) {
      if (served.includes(v)) continue;
      if (!allServe && version.state === 'READY' && existsSync(join(dir, String(v)))) continue;
      m.versions.delete(v);
      if (version.host !== undefined) {
        this.#registry.remove(name, String(v));
        void this.#retire(version.host);
      }
    }
    m.state = [...m.versions.values()].some((v) => v.state === 'READY') ? 'READY' : 'UNAVAILABLE';
    m.failed = failures.join('; ');
    // Each failed version has its own row and reason in the index; m.reason is the config's.
    if (m.state === 'READY') this.#log('info', `microbatch repository: model "${name}" serves version${served.length > 1 ? 's' : ''} ${served.join(', ')}`);
  }

  async #unload(name: string, removed = false): Promise<void> {
    const m = this.#model(name);
    const hosts = [...m.versions.values()].flatMap((v) => (v.host === undefined ? [] : [v.host]));
    for (const v of m.versions.values()) v.state = 'UNLOADING';
    m.state = 'UNLOADING';
    this.#registry.remove(name);
    await Promise.all(hosts.map((h) => this.#retire(h)));
    if (removed) {
      this.#models.delete(name);
      return;
    }
    for (const v of m.versions.values()) {
      v.state = 'UNAVAILABLE';
      v.reason = 'unloaded';
      delete v.host;
    }
    m.state = 'UNAVAILABLE';
    m.fingerprint = undefined;
  }

  /** Takes a host out of service: after `retireAfterMs` it answers what it holds, then stops. */
  #retire(host: InferenceServable): Promise<void> {
    const after = this.#options.retireAfterMs ?? 1000;
    const done = new Promise<void>((r) => setTimeout(r, after))
      .then(() => host.stop({ drain: true }))
      .catch((e: unknown) => this.#log('error', `microbatch repository: stopping ${host.name} failed: ${isError(e) ? e.message : String(e)}`))
      .finally(() => this.#retiring.delete(done));
    this.#retiring.add(done);
    return done;
  }
}
