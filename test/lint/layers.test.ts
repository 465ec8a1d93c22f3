import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
const FIXTURE = join(ROOT, 'test/fixtures/lint/src/engine/upward-import.ts');

// ESLint loads its (ESM) config with a dynamic import, which jest's module system refuses, so the
// Node API runs in a child process. The text is linted as if it were src/engine/upward-import.ts;
// the type-aware rules are switched off because that file is not on disk for the TypeScript project.
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

function lintAsEngineFile(text: string): LintMessage[] {
  const out = execFileSync(process.execPath, ['-e', LINT, ROOT, join(ROOT, 'src/engine/upward-import.ts')], { input: text, encoding: 'utf8' });
  return (JSON.parse(out) as LintMessage[]).filter((m) => m.ruleId === 'no-restricted-imports');
}

jest.setTimeout(60_000);

test('the layer rule fails on an upward import (engine -> api) and allows one within the layer', () => {
  const messages = lintAsEngineFile(readFileSync(FIXTURE, 'utf8'));
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({ line: 2, severity: 2 });
  expect(messages[0]?.message).toContain('Imports point downward only (docs/architecture.md)');
});

test('the layer rule accepts downward imports', () => {
  expect(lintAsEngineFile("import { systemClock } from '../core/clock';\nexport const c = systemClock;\n")).toEqual([]);
});
