// Checks the built API site (docs/api, `npm run docs`) has no link leaving it except the deliberate
// ones in ALLOWED: typedoc turns a bare file name such as engine.md into http://engine.md (.md is a
// top-level domain), and a relative link to a file outside docs/ becomes a link nobody can follow.
// Used by scripts/check-docs.js (`npm run test:docs`).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** Links that leave the site on purpose: prefixes of the href. */
const ALLOWED = [
  'https://typedoc.org/', // the generator's footer
  'https://v8.dev/docs/stack-trace-api', // Error.captureStackTrace's docs, inherited from @types/node
  'https://github.com/microsoft/onnxruntime/blob/main/include/onnxruntime/core/', // onnxruntime's SessionOptions docs
];

function htmlFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? htmlFiles(p) : e.name.endsWith('.html') ? [p] : [];
  });
}

/** Every problem link of the site at `site`, as "page: href". */
function checkSite(site) {
  const problems = [];
  for (const file of htmlFiles(site)) {
    const html = fs.readFileSync(file, 'utf8');
    for (const m of html.matchAll(/<a\s[^>]*href="([^"]*)"/g)) {
      const href = m[1].replace(/&amp;/g, '&');
      const page = path.relative(site, file);
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) {
        if (!ALLOWED.some((a) => href.startsWith(a))) problems.push(`docs/api/${page}: link leaves the site: ${href}`);
      } else if (href !== '' && !href.startsWith('#')) {
        const target = path.resolve(path.dirname(file), decodeURI(href.split('#')[0]));
        if (href.split('#')[0] !== '' && !fs.existsSync(target)) problems.push(`docs/api/${page}: broken link: ${href}`);
      }
    }
  }
  return problems;
}

if (require.main === module) {
  const problems = checkSite(path.join(__dirname, '..', 'docs/api'));
  for (const p of problems) console.error(p);
  if (problems.length > 0) process.exit(1);
  console.log('ok: no link leaves the site except the allowed ones');
}
module.exports = { checkSite, ALLOWED };
