import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { ADAPTIVE_DEFAULTS, CACHE_DEFAULTS, GENERATION_DEFAULTS, HOST_DEFAULTS, SERVING_DEFAULTS } from '../../src/core/defaults';
import { HOST_OPTION_KEYS, resolveOptions } from '../../src/core/options';
import { greedyPolicy } from '../../src/core/policy';
import { resolveGeneration } from '../../src/generate/options';

// The table in src/core/defaults.ts is the one place a default is written: the options' TSDoc
// must state its values, and the code must apply them.

const ROOT = join(__dirname, '..', '..');

/** The `@default` text of each property of `interfaceName` in `file` (properties without one are left out). */
function documentedDefaults(file: string, interfaceName: string): Map<string, string> {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const found = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === interfaceName);
  if (found === undefined) throw new Error(`no interface ${interfaceName} in ${file}`);
  const out = new Map<string, string>();
  for (const member of found.members) {
    if (!ts.isPropertySignature(member)) continue;
    const tag = ts.getJSDocTags(member).find((t) => t.tagName.text === 'default');
    if (tag !== undefined) out.set(member.name.getText(source), ts.getTextOfJSDocComment(tag.comment) ?? '');
  }
  return out;
}

/** How TSDoc writes a table value: strings quoted, numbers as JavaScript prints them. */
function written(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

describe.each([
  ['src/core/host-options.ts', 'HostOptions', HOST_DEFAULTS],
  ['src/core/host-options.ts', 'CacheOptions', CACHE_DEFAULTS],
  ['src/core/adaptive-options.ts', 'AdaptivePolicyOptions', ADAPTIVE_DEFAULTS],
  ['src/generate/options.ts', 'GenerationOptions', GENERATION_DEFAULTS],
])('%s %s', (file, name, table) => {
  const documented = documentedDefaults(file, name);

  test.each(Object.entries(table))('`%s` is documented with the value of the table', (key, value) => {
    const text = documented.get(key);
    expect(text).toBeDefined();
    // The value comes first; words after it explain.
    expect((text as string).split(/\s/)[0]).toBe(written(value));
  });
});

test('resolveOptions fills every host default from the table', () => {
  const o = resolveOptions('t', { maxBatchSize: 4 });
  const { policy, ...rest } = HOST_DEFAULTS;
  expect(o).toMatchObject(rest);
  expect(policy).toBe('greedy');
  expect(o.policy).toBe(greedyPolicy);
  expect(resolveOptions('t', { maxBatchSize: 4, cache: true }).cache).toEqual({ ...CACHE_DEFAULTS, key: undefined });
  expect(resolveOptions('t', { maxBatchSize: 4, cache: {} }).cache).toEqual({ ...CACHE_DEFAULTS, key: undefined });
});

test('resolveGeneration fills every generation default from the table', () => {
  const o = resolveGeneration('t', { maxBatchSize: 2, initialState: () => 0 });
  expect(o).toMatchObject(GENERATION_DEFAULTS);
});

test('SERVING_DEFAULTS lists host options only, and only where serving differs from the library', () => {
  for (const [key, value] of Object.entries(SERVING_DEFAULTS)) {
    expect(HOST_OPTION_KEYS).toContain(key);
    expect((HOST_DEFAULTS as Record<string, unknown>)[key]).not.toBe(value);
  }
});
