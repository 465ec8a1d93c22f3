// Copies uPlot (the dashboard's chart library, a devDependency) into dist/vendor/uplot, so that the
// published package serves it from its own files: a user installs no chart library and the page
// fetches nothing from outside. `npm run build` runs it after tsc; a checkout that was not built
// serves the copy in node_modules instead (src/http/dashboard/assets.ts).
'use strict';
const { copyFileSync, mkdirSync } = require('node:fs');
const { dirname, join } = require('node:path');

const from = dirname(require.resolve('uplot/package.json'));
const to = join(__dirname, '..', 'dist', 'vendor', 'uplot');
mkdirSync(to, { recursive: true });
for (const [src, dest] of [
  ['dist/uPlot.iife.min.js', 'uPlot.iife.min.js'],
  ['dist/uPlot.min.css', 'uPlot.min.css'],
  ['LICENSE', 'LICENSE'],
  ['package.json', 'package.json'],
]) {
  copyFileSync(join(from, src), join(to, dest));
}
