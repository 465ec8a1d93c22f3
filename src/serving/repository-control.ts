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
  /** Loads (or, when loaded and changed, reloads) a model; resolves once it serves. */
  load(name: string): Promise<void>;
  /** Unloads a model; resolves once its queued requests are answered and its hosts stopped. */
  unload(name: string): Promise<void>;
}
