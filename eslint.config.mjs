// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first (docs/architecture.md draws them). A folder may import from
 * folders on lower rows only; folders on one row (the transports and edges) do not import each
 * other: the HTTP, socket and Redis transports share what they need through lower rows (`serving`,
 * the protocol-neutral core; `remote`, whose root holds the wire format both remote transports
 * speak). `repository` (a Triton model repository) makes hosts with `onnx` and fills the
 * `serving` registry, so it sits above the edges it uses; `cli` is the outermost edge and may use
 * the other edges. A folder given as `a/b` is its
 * own zone inside `a`.
 */
const LAYERS = [['core'], ['tensor'], ['batchers'], ['executors'], ['engine'], ['generate'], ['api'], ['serving'], ['remote'], ['http', 'grpc', 'remote/socket', 'remote/redis', 'onnx', 'observe'], ['repository'], ['cli']];

/**
 * Folders whose index.ts is their public entry (a package subpath, or the serving core a transport
 * builds on): from any other zone they are imported through that index, never their internals.
 * `executors/worker` is left out on purpose: its index is what worker modules import, while the
 * host side (api, generate, onnx, remote) builds on its internals.
 */
const ENTRY_FOLDERS = ['serving', 'http', 'grpc', 'onnx', 'remote/socket', 'remote/redis', 'repository'];

export const UPWARD_IMPORT_MESSAGE = 'Imports point downward only (docs/architecture.md): this folder may not import from a higher layer or a sibling edge.';
export const INTERNALS_MESSAGE = 'Import another folder through its entry file (its index.ts), not its internals.';

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A regex source for relative imports, from a file anywhere in zone `from`, of the folder `to`
 * (`tail` matches what follows the folder's name): `to` spelled from src/ (`../../remote/socket`),
 * and spelled from the nearest common folder (`../socket` from remote/redis, `./socket` from remote).
 */
function relativeTo(from, to, tail) {
  const f = from.split('/');
  const t = to.split('/');
  let common = 0;
  while (common < f.length && common < t.length && f[common] === t[common]) common++;
  const spellings = [`(\\.\\./)+${escape(to)}`];
  if (common > 0) {
    const rest = escape(t.slice(common).join('/'));
    spellings.push(common === f.length ? `(\\./|(\\.\\./)+)${rest}` : `(\\.\\./)+${rest}`);
  }
  return `^(${spellings.join('|')})${tail}`;
}

/** One `files` block per zone (parents before the zones inside them, which replace their rule). */
const layerBlocks = LAYERS.flatMap((row, rank) => row.map((zone) => ({ zone, rank, row })))
  .sort((a, b) => a.zone.split('/').length - b.zone.split('/').length)
  .map(({ zone, rank, row }) => {
    const forbidden = [...LAYERS.slice(rank + 1).flat(), ...row.filter((f) => f !== zone)];
    const inside = (a, b) => a === b || a.startsWith(`${b}/`);
    const entries = ENTRY_FOLDERS.filter((e) => !inside(zone, e) && !inside(e, zone));
    const patterns = [
      ...forbidden.map((to) => ({ regex: relativeTo(zone, to, '(/|$)'), message: UPWARD_IMPORT_MESSAGE })),
      { regex: '^(\\.\\./)+(index)?$|^\\.\\.$', message: `${UPWARD_IMPORT_MESSAGE} (The package root re-exports every layer.)` },
      ...entries.map((to) => ({ regex: relativeTo(zone, to, '/(?!index$).+'), message: INTERNALS_MESSAGE })),
    ];
    return { files: [`src/${zone}/**/*.ts`], rules: { 'no-restricted-imports': ['error', { patterns }] } };
  });

export default tseslint.config(
  { ignores: ['dist/', 'docs/api/', 'node_modules/', 'coverage/', 'bench/results/', 'test/fixtures/lint/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'always'],
      'no-console': 'off',
    },
  },
  {
    // Type-aware: a promise nobody awaits or handles is how a request ends up never answered.
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  ...layerBlocks,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly', globalThis: 'readonly', setInterval: 'readonly', clearInterval: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly' } },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
