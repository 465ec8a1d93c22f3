import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures/lint');

// ESLint loads its (ESM) config with a dynamic import, which jest's module system refuses, so the
// Node API runs in a child process. A fixture's text is linted as if it were at its path under
// src/ (test/fixtures/lint/src/engine/upward-import.ts as src/engine/upward-import.ts); the
// type-aware rules are switched off because that file is not on disk for the TypeScript project.
const LINT = `
const { ESLint } = require('eslint');
let text = '';
process.stdin.on('data', (d) => (text += d)).on('end', async () => {
  const eslint = new ESLint({
    cwd: process.argv[1],
    overrideConfig: { files: ['src/**/*.ts'], languageOptions: { parserOptions: { projectService: false } }, rules: { '@typescript-eslint/no-floating-promises': 'off' } },
  });
  const [result] = await eslint.lintText(text, { filePath: process.argv[2] });
  process.stdout.write(JSON.stringify(result.messages));
});`;

interface LintMessage {
  readonly ruleId: string | null;
  readonly message: string;
  readonly line: number;
  readonly severity: number;
}

/** The import-rule messages for `text` linted as if it were the file `path` (under src/). */
function lintAs(path: string, text: string): LintMessage[] {
  const out = execFileSync(process.execPath, ['-e', LINT, ROOT, join(ROOT, path)], { input: text, encoding: 'utf8' });
  return (JSON.parse(out) as LintMessage[]).filter((m) => m.ruleId === 'no-restricted-imports');
}

function lintAsEngineFile(text: string): LintMessage[] {
  return lintAs('src/engine/upward-import.ts', text);
}

/** A fixture (a path under test/fixtures/lint), linted at the same path under the root. */
function lintFixture(path: string): LintMessage[] {
  return lintAs(path, readFileSync(join(FIXTURES, path), 'utf8'));
}

jest.setTimeout(60_000);

test('the layer rule fails on an upward import (engine -> api) and allows one within the layer', () => {
  const messages = lintFixture('src/engine/upward-import.ts');
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({ line: 2, severity: 2 });
  expect(messages[0]?.message).toContain('Imports point downward only (docs/architecture.md)');
});

test('the layer rule accepts downward imports', () => {
  expect(lintAsEngineFile("import { systemClock } from '../core/clock';\nexport const c = systemClock;\n")).toEqual([]);
});

test.each([
  ['a transport may not import another transport (remote/redis -> remote/socket), only what they share below them', 'src/remote/redis/sibling-transport-import.ts', 'Imports point downward only (docs/architecture.md)'],
  ["another folder's internals are imported through its entry file (cli -> http/server refused, cli -> http allowed)", 'src/cli/internals-import.ts', 'through its entry file (its index.ts)'],
])('%s', (_title, fixture, message) => {
  const messages = lintFixture(fixture);
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({ line: 2, severity: 2 });
  expect(messages[0]?.message).toContain(message);
});

test('a transport imports the serving core through its entry file', () => {
  expect(lintAs('src/http/x.ts', "import { ServingError } from '../serving';\nexport const e = ServingError;\n")).toEqual([]);
  expect(lintAs('src/http/x.ts', "import { ServingError } from '../serving/errors';\nexport const e = ServingError;\n")).toHaveLength(1);
  expect(lintAs('src/serving/x.ts', "import { HttpError } from '../http';\nexport const e = HttpError;\n")).toHaveLength(1);
});
