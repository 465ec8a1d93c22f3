#!/usr/bin/env node
// The `microbatch` command. Runs the compiled CLI (dist/cli/main.js) when the package is built;
// in a source checkout without a build it runs the TypeScript sources through ts-node's
// transpile-only register, so `npx microbatch ...` works right after `npm install`.
// MICROBATCH_CLI_SOURCE=1 forces the sources (tests use it so a stale build is never what runs).
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const built = join(root, 'dist', 'cli', 'main.js');
let cli;
if (existsSync(built) && process.env.MICROBATCH_CLI_SOURCE !== '1') {
  cli = require(built);
} else {
  try {
    require('ts-node/register/transpile-only');
  } catch {
    console.error('microbatch: no build found (dist/cli/main.js) and ts-node is not installed; run `npm run build` first');
    process.exit(1);
  }
  cli = require(join(root, 'src', 'cli', 'main.ts'));
}

cli.run(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
