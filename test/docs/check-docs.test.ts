/**
 * The pieces of `npm run test:docs` (scripts/check-docs.js, scripts/check-site-links.js) that can
 * be checked without packing: which blocks are compiled, the README setup applied to the tsconfig
 * `tsc --init` writes, and links that leave the built site.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain CommonJS scripts
const docs = require('../../scripts/check-docs.js') as {
  applyReadmeSetup(text: string): string;
  PARTIAL: RegExp;
  COMPLETE: readonly string[];
};
// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain CommonJS scripts
const site = require('../../scripts/check-site-links.js') as { checkSite(dir: string): string[] };

test('a block is partial only by a first-line "// partial: <why>" comment', () => {
  expect(docs.PARTIAL.test('// partial: `Scorer` is the class of the first example')).toBe(true);
  expect(docs.PARTIAL.test('  // partial: indented in a list item')).toBe(true);
  expect(docs.PARTIAL.test('// partial:')).toBe(false); // a reason is required
  expect(docs.PARTIAL.test("import { ModelHost } from 'microbatch';")).toBe(false);
  expect(docs.COMPLETE).toEqual(expect.arrayContaining(['README.md', 'docs/getting-started.md', 'docs/scale-out.md', 'docs/serving.md', 'docs/generation.md']));
});

test("the README's setup is applied to tsc --init's tsconfig, nothing else changed", () => {
  const generated = '{\n  // Visit https://aka.ms/tsconfig\n  "compilerOptions": {\n    "module": "nodenext",\n    "types": [],\n    "strict": true,\n  }\n}\n';
  const applied = docs.applyReadmeSetup(generated);
  expect(applied).toContain('"types": ["node"],');
  expect(applied).toContain('"experimentalDecorators": true,');
  expect(applied).toContain('"emitDecoratorMetadata": true,');
  expect(applied.replace(/ +"(experimentalDecorators|emitDecoratorMetadata)": true,\n/g, '').replace('["node"]', '[]')).toBe(generated);
  expect(() => docs.applyReadmeSetup('{ "compilerOptions": {} }')).toThrow('tsc --init no longer writes "types": []');
});

test('the site check reports bare file names typedoc turned into domains, and broken relative links', () => {
  const dir = mkdtempSync(join(tmpdir(), 'microbatch-site-'));
  try {
    mkdirSync(join(dir, 'documents'));
    writeFileSync(join(dir, 'index.html'), '<a href="documents/engine.html">engine</a> <a href="https://typedoc.org/">TypeDoc</a>');
    writeFileSync(join(dir, 'documents', 'engine.html'), '<a href="http://engine.md">engine.md</a> <a href="../missing.html#x">x</a> <a href="#top">top</a>');
    expect(site.checkSite(dir)).toEqual([
      'docs/api/documents/engine.html: link leaves the site: http://engine.md',
      'docs/api/documents/engine.html: broken link: ../missing.html#x',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
