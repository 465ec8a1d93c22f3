import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonConfig, readTextConfig, type ReadConfig } from './config-schema';
import type { VersionPolicy } from './model-settings';

/**
 * The model folders of a repository: its immediate sub-folders, by name (hidden ones left out), sorted.
 *
 * @example
 * ```ts
 * listModelFolders('models'); // ['text-direction', 'text-recognition']
 * ```
 */
export function listModelFolders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => (e.isDirectory() || (e.isSymbolicLink() && isDirectory(join(dir, e.name)))) && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The version folders of a model folder, as numbers, ascending: names of decimal digits, where a
 * name longer than one digit may not start with `0` (Triton skips `01`; a lone `0` is version 0).
 *
 * @example
 * ```ts
 * listVersions('models/text-direction'); // [1, 2]
 * ```
 */
export function listVersions(modelDir: string): number[] {
  return readdirSync(modelDir, { withFileTypes: true })
    .filter((e) => /^(0|[1-9][0-9]*)$/.test(e.name) && (e.isDirectory() || (e.isSymbolicLink() && isDirectory(join(modelDir, e.name)))))
    .map((e) => Number(e.name))
    .filter((v) => Number.isSafeInteger(v))
    .sort((a, b) => a - b);
}

/** The config file of a model folder: `config.pbtxt`, else `config.json`, else none. */
export function configFile(modelDir: string): string | undefined {
  for (const name of ['config.pbtxt', 'config.json']) {
    const path = join(modelDir, name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

/** Reads a model's config file (text format or JSON, by its extension); no file is an empty config. */
export function readConfigFile(path: string | undefined): ReadConfig {
  if (path === undefined) return { config: {}, warnings: [] };
  const text = readFileSync(path, 'utf8');
  return path.endsWith('.json') ? readJsonConfig(text, path) : readTextConfig(text, path);
}

/**
 * The versions a policy serves out of those on disk, ascending: `latest` the highest N, `all`
 * every one, `specific` those listed that exist (`missing` lists the others).
 *
 * @example
 * ```ts
 * selectVersions([1, 2, 3], { latest: 2 }); // { served: [2, 3], missing: [] }
 * ```
 */
export function selectVersions(available: readonly number[], policy: VersionPolicy): { served: number[]; missing: number[] } {
  const sorted = [...available].sort((a, b) => a - b);
  if ('all' in policy) return { served: sorted, missing: [] };
  if ('latest' in policy) return { served: sorted.slice(Math.max(0, sorted.length - policy.latest)), missing: [] };
  const wanted = [...new Set(policy.specific)].sort((a, b) => a - b);
  return { served: wanted.filter((v) => sorted.includes(v)), missing: wanted.filter((v) => !sorted.includes(v)) };
}

/**
 * A fingerprint of a model folder: its config files' and each version folder's files'
 * modification times and sizes, one `|`-separated part per version (`<v>=...`). A poll or a load
 * whose fingerprint is unchanged does nothing (Triton's rule).
 */
export function fingerprint(modelDir: string): string {
  const stamp = (path: string): string => {
    try {
      const s = statSync(path);
      return `${s.mtimeMs}:${s.size}`;
    } catch {
      return '-';
    }
  };
  const versions = listVersions(modelDir).map((v) => {
    const folder = join(modelDir, String(v));
    const files = readdirSync(folder).sort().map((f) => `${f}@${stamp(join(folder, f))}`);
    return `${v}=${files.join(',')}`;
  });
  return [`config=${stamp(join(modelDir, 'config.pbtxt'))},${stamp(join(modelDir, 'config.json'))}`, ...versions].join('|');
}
