// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first (docs/architecture.md draws them). A folder may import from
 * folders on lower rows only; folders on one row (the edges) do not import each other. `cli` is
 * the outermost edge and may use the other edges.
 */
const LAYERS = [['core'], ['tensor'], ['batchers'], ['executors'], ['engine'], ['generate'], ['api'], ['serving'], ['remote'], ['onnx', 'observe', 'http'], ['cli']];

export const UPWARD_IMPORT_MESSAGE = 'Imports point downward only (docs/architecture.md): this folder may not import from a higher layer or a sibling edge.';

/** One `files` block per folder: relative imports of higher layers (or of the package root) fail. */
const layerBlocks = LAYERS.flatMap((row, rank) =>
  row.map((folder) => {
    const forbidden = [...LAYERS.slice(rank + 1).flat(), ...row.filter((f) => f !== folder)];
    return {
      files: [`src/${folder}/**/*.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              { regex: `^(\\.\\./)+(${forbidden.join('|')})(/|$)`, message: UPWARD_IMPORT_MESSAGE },
              { regex: '^(\\.\\./)+(index)?$|^\\.\\.$', message: `${UPWARD_IMPORT_MESSAGE} (The package root re-exports every layer.)` },
            ],
          },
        ],
      },
    };
  }),
);

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
