import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonConfig, readTextConfig, type ReadConfig } from './config-schema';
import type { VersionPolicy } from './model-settings';

/** The model folders of a repository: its immediate sub-folders, by name (hidden ones left out), sorted. */
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
 * A fingerprint of what a model's load read: the config file's and each version's model file's
 * modification time and size. A load of a model whose fingerprint is unchanged does nothing.
 */
export function fingerprint(modelDir: string, config: string | undefined, versions: readonly number[], modelFile: string): string {
  const stamp = (path: string): string => {
    try {
      const s = statSync(path);
      return `${s.mtimeMs}:${s.size}`;
    } catch {
      return '-';
    }
  };
  return [config === undefined ? 'none' : stamp(config), ...versions.map((v) => `${v}=${stamp(join(modelDir, String(v), modelFile))}`)].join('|');
}
