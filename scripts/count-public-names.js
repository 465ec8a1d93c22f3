#!/usr/bin/env node
// Counts the public names of each entry point in package.json "exports" (issue 28 asks for the
// surface before and after): values and types, and how many are @deprecated aliases. Reads the
// sources through the TypeScript compiler API, so it needs no build.
// Usage: node scripts/count-public-names.js [--list]
'use strict';
const path = require('node:path');
const ts = require('typescript');

const root = path.resolve(__dirname, '..');
const pkg = require(path.join(root, 'package.json'));
const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target === 'object' && target.types)
  .map(([subpath, target]) => [subpath, path.join(root, target.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'))]);
const program = ts.createProgram(entries.map(([, file]) => file), { experimentalDecorators: true, module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, skipLibCheck: true, noEmit: true });
const checker = program.getTypeChecker();
const list = process.argv.includes('--list');
let total = 0;
const distinct = new Set();
const rows = [];
for (const [subpath, file] of entries) {
  const source = program.getSourceFile(file);
  if (source === undefined) throw new Error(`no source for ${subpath}: ${file}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  const exported = moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol);
  let values = 0;
  let deprecated = 0;
  const names = [];
  for (const symbol of exported) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const isValue = (target.flags & ts.SymbolFlags.Value) !== 0;
    if (isValue) values++;
    const tags = [...symbol.getJsDocTags(checker), ...target.getJsDocTags(checker)];
    const old = tags.some((t) => t.name === 'deprecated');
    if (old) deprecated++;
    distinct.add(symbol.name);
    names.push(`${symbol.name}${isValue ? '' : ' (type)'}${old ? ' @deprecated' : ''}`);
  }
  total += exported.length;
  rows.push({ entry: `microbatch${subpath === '.' ? '' : subpath.slice(1)}`, names: exported.length, values, types: exported.length - values, deprecated });
  if (list) console.log(`${subpath}:\n  ${names.sort().join('\n  ')}`);
}
console.table(rows);
console.log(`total: ${total} public names over ${entries.length} entry points (${distinct.size} distinct: a name in the root is also in its subpath)`);
