// Builds dist/ when it is missing or older than src/. The examples import 'microbatch' by name, which
// Node resolves to dist/ (the package's own exports), and some tests run what a user of the published
// package runs (compiled JS under plain `node`), so `npm start` (prestart) and `npm test` (jest's
// global setup) both call this: a fresh clone needs no `npm run build` first. Building takes a few
// seconds; when dist/ is newer than every source file it is skipped.
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

function isStale() {
  const stamp = join(ROOT, 'dist', 'index.js');
  if (!existsSync(stamp)) return 'dist/ is missing';
  const built = statSync(stamp).mtimeMs;
  const sources = Math.max(newest(join(ROOT, 'src')), statSync(join(ROOT, 'tsconfig.build.json')).mtimeMs, statSync(join(ROOT, 'tsconfig.json')).mtimeMs);
  return sources > built ? 'src/ changed since the last build' : undefined;
}

module.exports = async function buildDist() {
  const why = isStale();
  if (why === undefined) return;
  const started = Date.now();
  process.stdout.write(`\n[microbatch] ${why}: building it (tsc -p tsconfig.build.json) (the examples and some tests load the compiled package)...\n`);
  const tsc = require.resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`building dist/ failed (tsc exited ${result.status ?? result.signal}); run \`npm run build\` to see why`);
  process.stdout.write(`[microbatch] dist/ built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
};

if (require.main === module) {
  module.exports().catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
}
