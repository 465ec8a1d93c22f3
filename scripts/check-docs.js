// Type-checks every TypeScript block of README.md and docs/*.md the way a new user meets it: packs
// microbatch, makes a consumer project as the README's setup says (`npm init -y`, `"type": "module"`,
// the package and its peers installed, `npx tsc --init` as generated plus the two decorator options
// the README states before its first snippet), writes each ```ts block as its own module, runs
// `tsc --noEmit` once over all of them and reports errors at the doc's file:line.
// A block whose first line is a `// partial: <why>` comment is an excerpt and is not compiled; only
// the guides outside COMPLETE may have one (docs/development.md, "Documentation").
// Then, when docs/api exists (`npm run docs`), checks the site has no link leaving it except the
// allow-listed ones (scripts/check-site-links.js). `npm run test:docs`; CI runs it after "package".
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
/** Docs whose every block must compile whole: no `// partial:` block allowed. */
const COMPLETE = [
  'README.md',
  'docs/getting-started.md',
  'docs/scale-out.md',
  'docs/serving.md',
  'docs/generation.md',
];
const PARTIAL = /^\s*\/\/\s*partial:\s*\S/;
/** The setup the README must state once, before its first TypeScript block. */
const SETUP = ['npm init -y', 'npm pkg set type=module', 'npx tsc --init', '"types": ["node"]', '"experimentalDecorators": true', '"emitDecoratorMetadata": true'];

function say(message) {
  process.stdout.write(`[docs] ${message}\n`);
}

function run(cmd, args, cwd, quiet = true) {
  return execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', npm_config_onnxruntime_node_install: 'skip' },
  });
}

/** Every ```ts / ```typescript block of a markdown file, with the line of its first code line. */
function extractBlocks(file) {
  const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const blocks = [];
  let open = null;
  lines.forEach((line, i) => {
    if (open === null) {
      const m = /^(\s*)```(ts|typescript)\s*$/.exec(line);
      if (m) open = { file, line: i + 2, code: [] };
      else if (/^\s*```(ts|typescript)\b/.test(line)) throw new Error(`${file}:${i + 1}: unknown info string "${line.trim()}" (use \`\`\`ts)`);
    } else if (/^\s*```\s*$/.test(line)) {
      blocks.push(open);
      open = null;
    } else {
      open.code.push(line);
    }
  });
  if (open) throw new Error(`${file}:${open.line - 1}: unclosed code block`);
  return blocks.map((b) => ({ ...b, partial: PARTIAL.test(b.code[0] ?? ''), code: b.code.join('\n') + '\n' }));
}

function docFiles() {
  const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort();
  return ['README.md', ...docs.map((f) => `docs/${f}`)];
}

/** Checks the README states the setup once, before its first TypeScript block; returns problems. */
function checkReadmeSetup() {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const firstBlock = readme.search(/^```ts/m);
  const before = readme.slice(0, firstBlock);
  return SETUP.filter((s) => !before.includes(s)).map((s) => `README.md: the setup before the first TypeScript block does not say ${s}`);
}

/**
 * Makes tsc --init's tsconfig (JSONC, as generated) hold the README's setup: `"types": ["node"]`, as
 * the generated file's own comment says for Node.js, and the two decorator options.
 */
function applyReadmeSetup(tsconfigText) {
  if (!tsconfigText.includes('"types": [],')) throw new Error('tsc --init no longer writes "types": []: update the README setup');
  tsconfigText = tsconfigText.replace('"types": [],', '"types": ["node"],');
  const options = '"experimentalDecorators": true,\n    "emitDecoratorMetadata": true,\n    ';
  const at = tsconfigText.indexOf('"compilerOptions": {');
  if (at < 0) throw new Error('tsc --init wrote a tsconfig.json without "compilerOptions"');
  const insert = tsconfigText.indexOf('\n', at) + 1;
  return tsconfigText.slice(0, insert) + '    ' + options.trimEnd() + '\n' + tsconfigText.slice(insert);
}

/** Packages the blocks import besides microbatch, its peers and node: (express, fastify, ...). */
function importedPackages(blocks) {
  const names = new Set();
  for (const b of blocks) {
    for (const m of b.code.matchAll(/(?:from|import)\s+'([^'.][^']*)'/g)) {
      const parts = m[1].split('/');
      const name = m[1].startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      if (!m[1].startsWith('node:') && name !== 'microbatch') names.add(name);
    }
  }
  return [...names];
}

function makeConsumer(work, blocks) {
  const pkg = require(path.join(ROOT, 'package.json'));
  say('npm pack (prepack builds dist/)');
  const packed = run('npm', ['pack', '--silent', '--pack-destination', work], ROOT).trim().split('\n').pop();
  const tarball = path.join(work, packed);
  const consumer = path.join(work, 'consumer');
  fs.mkdirSync(consumer);
  say(`consumer project ${consumer}: npm init -y, npm pkg set type=module, npm install, npx tsc --init`);
  run('npm', ['init', '-y'], consumer);
  run('npm', ['pkg', 'set', 'type=module'], consumer);
  // The peers and the toolchain at the exact versions this project is tested with (npm's cache).
  const dev = pkg.devDependencies;
  const deps = { ...pkg.dependencies };
  const extra = importedPackages(blocks).filter((n) => !(n in pkg.peerDependencies) && !(n in deps));
  for (const name of extra) {
    if (!(name in dev)) throw new Error(`a doc block imports ${name}, which is not a devDependency: add it there (its tested version)`);
  }
  const typings = extra.map((n) => `@types/${n}`).filter((n) => n in dev);
  const peers = [...Object.keys(pkg.peerDependencies), ...extra, ...typings].map((name) => `${name}@${dev[name]}`);
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball, ...peers,
    `typescript@${dev.typescript}`, `@types/node@${dev['@types/node']}`], consumer, false);
  run('npx', ['--no-install', 'tsc', '--init'], consumer);
  const tsconfig = path.join(consumer, 'tsconfig.json');
  fs.writeFileSync(tsconfig, applyReadmeSetup(fs.readFileSync(tsconfig, 'utf8')));
  return consumer;
}

/** Parses `file.ts(line,col): error TSxxxx: message` lines, mapping each back to the doc. */
function mapErrors(output, modules) {
  const out = [];
  for (const line of output.split('\n')) {
    const m = /^(snippets\/[^(]+)\((\d+),(\d+)\): (error TS\d+: .*)$/.exec(line);
    if (m && modules.has(m[1])) {
      const block = modules.get(m[1]);
      out.push(`${block.file}:${block.line + Number(m[2]) - 1}:${m[3]} ${m[4]}`);
    } else if (line.trim() !== '' && !line.startsWith('npm warn')) {
      out.push(line);
    }
  }
  return out;
}

function main() {
  const problems = checkReadmeSetup();
  const blocks = docFiles().flatMap(extractBlocks);
  for (const b of blocks) {
    if (b.partial && COMPLETE.includes(b.file)) {
      problems.push(`${b.file}:${b.line}: a "// partial:" block in a doc whose every block must compile whole`);
    }
  }
  const whole = blocks.filter((b) => !b.partial);
  say(`${blocks.length} TypeScript blocks in ${docFiles().length} files: ${whole.length} to compile, ${blocks.length - whole.length} partial`);
  const keep = process.argv.includes('--keep');
  const work = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'microbatch-docs-'));
  try {
    const consumer = makeConsumer(work, whole);
    fs.mkdirSync(path.join(consumer, 'snippets'));
    const modules = new Map();
    for (const b of whole) {
      const name = `snippets/${b.file.replace(/[/.]/g, '_')}_${b.line}.ts`;
      fs.writeFileSync(path.join(consumer, name), b.code);
      modules.set(name, b);
    }
    say(`tsc --noEmit over ${modules.size} modules`);
    try {
      run('npx', ['--no-install', 'tsc', '--noEmit', '-p', 'tsconfig.json', '--pretty', 'false'], consumer);
    } catch (err) {
      problems.push(...mapErrors(`${err.stdout ?? ''}${err.stderr ?? ''}`, modules));
      if (problems.length === 0) problems.push(`tsc failed: ${err.message}`);
    }
  } finally {
    if (keep) say(`kept ${work}`);
    else fs.rmSync(work, { recursive: true, force: true });
  }
  if (fs.existsSync(path.join(ROOT, 'docs/api/index.html'))) {
    problems.push(...require('./check-site-links.js').checkSite(path.join(ROOT, 'docs/api')));
  } else {
    say('docs/api not built (`npm run docs`): site links not checked');
  }
  if (problems.length > 0) {
    for (const p of problems) process.stderr.write(`${p}\n`);
    process.stderr.write(`[docs] ${problems.length} problem(s)\n`);
    process.exit(1);
  }
  say('ok: every TypeScript block compiles in a new consumer project; the site links stay inside it');
}

if (require.main === module) main();
module.exports = { extractBlocks, applyReadmeSetup, mapErrors, PARTIAL, COMPLETE };
