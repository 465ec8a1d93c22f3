import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The package's root: this file is src/http/dashboard/assets.ts, or its build
 * dist/http/dashboard/assets.js, three folders down either way.
 */
const ROOT = join(__dirname, '..', '..', '..');

/** The page's own files, shipped in the package's `assets/dashboard/`. */
const PAGE_DIR = join(ROOT, 'assets', 'dashboard');

/**
 * uPlot's files: the copy the build puts in dist/vendor/uplot (what a published package holds),
 * else the devDependency in node_modules (a checkout that was not built). Never fetched from anywhere.
 */
function vendored(file: string): () => string {
  return () => {
    const built = join(ROOT, 'dist', 'vendor', 'uplot', file);
    return existsSync(built) ? built : require.resolve(`uplot/dist/${file}`);
  };
}

const TYPES = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' } as const;

/** The files `/dashboard/` serves, by the name after `/dashboard/` (`''` is the page). */
const FILES: Readonly<Record<string, { readonly path: () => string; readonly type: string }>> = {
  '': { path: () => join(PAGE_DIR, 'index.html'), type: TYPES.html },
  'dashboard.js': { path: () => join(PAGE_DIR, 'dashboard.js'), type: TYPES.js },
  'dashboard.css': { path: () => join(PAGE_DIR, 'dashboard.css'), type: TYPES.css },
  'uPlot.iife.min.js': { path: vendored('uPlot.iife.min.js'), type: TYPES.js },
  'uPlot.min.css': { path: vendored('uPlot.min.css'), type: TYPES.css },
};

const cache = new Map<string, { readonly body: Buffer; readonly type: string }>();

/**
 * The file served as `/dashboard/{name}`, read once and kept; `undefined` for a name the dashboard
 * does not serve. Throws when a shipped file is missing (a broken install).
 * @internal
 */
export function dashboardAsset(name: string): { readonly body: Buffer; readonly type: string } | undefined {
  const known = cache.get(name);
  if (known !== undefined) return known;
  if (!Object.prototype.hasOwnProperty.call(FILES, name)) return undefined;
  const file = FILES[name] as { readonly path: () => string; readonly type: string };
  const asset = { body: readFileSync(file.path()), type: file.type };
  cache.set(name, asset);
  return asset;
}
