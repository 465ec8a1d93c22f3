/** Where a value is exported: the module file and the export's name. */
export interface ExportLocation {
  readonly module: string;
  readonly exportName: string;
}

/**
 * Finds the loaded CommonJS module that exports `value` (by identity), so that a worker thread can
 * load the same class or object by path and name. Searches `require.cache`: it works for compiled
 * JS, ts-node and jest (whose `require.cache` mirrors its own module registry); a class from an
 * ES module is not in it, so callers pass its location explicitly.
 * @internal
 */
export function findModuleExport(value: unknown): ExportLocation | undefined {
  for (const [file, mod] of Object.entries(require.cache)) {
    const exported: unknown = mod?.exports;
    if (exported === undefined || exported === null) continue;
    if (exported === value) return { module: file, exportName: 'default' };
    if (typeof exported !== 'object' && typeof exported !== 'function') continue;
    for (const key of Object.keys(exported)) {
      // Re-exports are getters; a throwing getter is not ours to worry about.
      try {
        if ((exported as Record<string, unknown>)[key] === value) return { module: file, exportName: key };
      } catch {
        /* skip */
      }
    }
  }
  return undefined;
}

/** Reads an export from a module file (`'default'` also accepts `module.exports = value`). @internal */
export function loadExport(module: string, exportName: string): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded by path at run time, in a worker
  const loaded = require(module) as Record<string, unknown>;
  if (exportName === 'default' && (loaded.default === undefined || typeof loaded === 'function')) return loaded;
  return loaded[exportName];
}
