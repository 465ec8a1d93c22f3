// onnxruntime-node builds output tensors with the host realm's typed-array constructors, while
// onnxruntime-common (loaded inside jest's vm sandbox) checks `instanceof` against the sandbox's.
// Sharing the host constructors makes both sides agree (see jest#2549, transformers.js#57).
const { TestEnvironment } = require('jest-environment-node');

const SHARED = [
  'Float32Array', 'Float64Array', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
  'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array',
];

module.exports = class OrtEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
  }
};
