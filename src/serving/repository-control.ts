import type { ModelConfig, ModelConfigBatching } from './model-config';

/**
 * One row of a model repository's index (Triton's repository extension): a model never loaded
 * shows its name only; a loaded one shows a row per version with its state, and the reason when it
 * is not READY.
 */
export interface RepositoryIndexEntry {
  readonly name: string;
  /** The version, as a string. @default none: a model never loaded, or one whose config failed */
  readonly version?: string;
  /** `READY`, `UNAVAILABLE` (failed, or unloaded), `LOADING` or `UNLOADING`. @default none: never loaded */
  readonly state?: 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';
  /** Why the version is not READY; `''` when it is. @default none */
  readonly reason?: string;
}

/**
 * What a transport's model repository routes call (`POST /v2/repository/index`, `.../load`,
 * `.../unload` over HTTP; `RepositoryIndex`, `RepositoryModelLoad`, `RepositoryModelUnload` over
 * gRPC): the repository that fills a registry sets itself as `registry.repository`. Errors are
 * `ServingError`s: `'unavailable'` when the mode does not allow loading, `'not-found'` for a model
 * the repository does not hold, `'invalid-argument'` for a load that failed.
 *
 * @example
 * ```ts
 * const rows = core.registry.repository?.index({ ready: true }) ?? [];
 * ```
 */
export interface RepositoryControl {
  /** Every model of the repository, loaded or not; with `ready`, the READY versions only. */
  index(options?: { readonly ready?: boolean }): RepositoryIndexEntry[];
  /**
   * Loads (or, when loaded and changed, reloads) a model; resolves once it serves. `config` (a
   * config in Triton's JSON form) replaces the model's config file for this load.
   */
  load(name: string, options?: { readonly config?: string }): Promise<void>;
  /** Unloads a model; resolves once its queued requests are answered and its hosts stopped. */
  unload(name: string): Promise<void>;
}

/**
 * What a host that serves one version of a repository model adds, for the metadata and
 * configuration answers: every version of its model served now, and the parts of its config the
 * host's options do not show.
 */
export interface RepositoryVersionInfo {
  /** The versions of the same model served now, ascending. */
  servedVersions(): readonly string[];
  /** The config's settings in force beyond the host's live options. */
  readonly config: Partial<Pick<ModelConfig, 'version_policy' | 'instance_group' | 'parameters'>> & { readonly dynamic_batching?: Partial<ModelConfigBatching> };
}

/** The repository information of a host, when it has some. @internal */
export function repositoryInfo(host: object): RepositoryVersionInfo | undefined {
  return (host as { repository?: RepositoryVersionInfo }).repository;
}
