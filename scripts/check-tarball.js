// Checks an unpacked npm tarball (its `package/` folder): what the package.json promises is there,
// every source map's sources are shipped, and every relative link in the shipped Markdown resolves.
'use strict';
const { existsSync, readdirSync, readFileSync, statSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');

const dir = resolve(process.argv[2] ?? '');
const problems = [];
const files = [];
(function walk(d) {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else files.push(p);
  }
})(dir);
const rel = (p) => relative(dir, p);

const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const promised = [pkg.main, pkg.types, ...Object.values(pkg.bin ?? {}), 'LICENSE', 'README.md', 'CHANGELOG.md'];
for (const target of Object.values(pkg.exports ?? {})) {
  if (typeof target === 'string') promised.push(target);
  else promised.push(...Object.values(target));
}
for (const paths of Object.values(pkg.typesVersions?.['*'] ?? {})) promised.push(...paths);
for (const p of promised) if (!existsSync(join(dir, p))) problems.push(`package.json names ${p}, which the tarball lacks`);
for (const f of ['repository', 'homepage', 'bugs', 'license']) if (pkg[f] === undefined) problems.push(`package.json has no "${f}"`);

let maps = 0;
for (const f of files.filter((p) => p.endsWith('.map'))) {
  maps++;
  const map = JSON.parse(readFileSync(f, 'utf8'));
  for (const source of map.sources ?? []) {
    const target = resolve(dirname(f), map.sourceRoot ?? '', source);
    if (!existsSync(target)) problems.push(`${rel(f)} points at ${source}, which the tarball lacks`);
  }
}

let links = 0;
for (const f of files.filter((p) => p.endsWith('.md'))) {
  const text = readFileSync(f, 'utf8').replace(/```[\s\S]*?```/g, '');
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const href = m[1];
    if (/^[a-z]+:/i.test(href) || href.startsWith('#')) continue;
    links++;
    const target = resolve(dirname(f), decodeURI(href.split('#')[0]));
    if (!existsSync(target) || (statSync(target).isDirectory() && !existsSync(join(target, 'README.md')))) {
      problems.push(`${rel(f)} links to ${href}, which the tarball lacks`);
    }
  }
}
for (const f of files) if (/(^|\/)(test|\.tmp|node_modules|\.ci)\//.test(rel(f))) problems.push(`${rel(f)} should not be published`);

if (problems.length > 0) {
  console.error(`the tarball has ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`[package] contents ok: ${files.length} files, ${maps} source maps whose sources are all shipped, ${links} relative Markdown links that all resolve`);
