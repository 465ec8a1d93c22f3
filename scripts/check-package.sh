#!/usr/bin/env bash
# Packs microbatch as `npm publish` would, checks what the tarball holds, installs it into a fresh
# consumer project outside this checkout, and runs a CommonJS, an ES module and a strictly
# type-checked TypeScript consumer (decorator style) against it. `npm run test:package`; CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export ONNXRUNTIME_NODE_INSTALL=skip npm_config_onnxruntime_node_install=skip
work=$(mktemp -d "${TMPDIR:-/tmp}/microbatch-package-XXXXXX")
trap 'rm -rf "$work"' EXIT
say() { printf '[package] %s\n' "$*"; }

say "npm pack (prepack builds dist/)"
npm pack --silent --pack-destination "$work" > "$work/pack.out"
tarball="$work/$(tail -n 1 "$work/pack.out")"
[ -f "$tarball" ] || { echo "npm pack wrote no tarball: $(cat "$work/pack.out")"; exit 1; }
mkdir "$work/unpacked"
tar -xzf "$tarball" -C "$work/unpacked"
say "$(basename "$tarball"): $(find "$work/unpacked/package" -type f | wc -l) files, $(du -k "$tarball" | cut -f1) KiB"

say "checking the tarball's contents"
node "$ROOT/scripts/check-tarball.js" "$work/unpacked/package"

say "installing the tarball into a consumer project ($work/consumer)"
mkdir "$work/consumer"
cp "$ROOT"/scripts/consumer/* "$work/consumer/"
cd "$work/consumer"
printf '{ "name": "microbatch-consumer", "version": "1.0.0", "private": true }\n' > package.json
# The consumer's own toolchain, at the versions this project is tested with (see DESIGN.md).
ts_version=$(node -p "require('$ROOT/node_modules/typescript/package.json').version")
node_types=$(node -p "require('$ROOT/node_modules/@types/node/package.json').version")
npm install --no-audit --no-fund --loglevel=error "$tarball" "typescript@$ts_version" "@types/node@$node_types"

say "CommonJS consumer"
node cjs.cjs
say "ES module consumer"
node esm.mjs
say "TypeScript consumer (strict, experimentalDecorators, exactOptionalPropertyTypes, no skipLibCheck)"
npx --no-install tsc -p tsconfig.json
node out/consumer.js
say "the microbatch command"
npx --no-install microbatch --help | head -n 3
say "ok: the packed package works in a consumer project"
