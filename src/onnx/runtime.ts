import type * as Ort from 'onnxruntime-node';

/** The onnxruntime-node module, as `import * as ort from 'onnxruntime-node'` would give it. */
export type OrtModule = typeof Ort;

let cached: OrtModule | undefined;

/**
 * Loads onnxruntime-node on first use. It is an optional peer dependency: the core of microbatch
 * never needs it, so it is required here lazily, and a user who imports `microbatch/onnx` without
 * it gets an error that names the package to install instead of a bare MODULE_NOT_FOUND.
 * @internal
 */
export function loadOrt(): OrtModule {
  if (cached !== undefined) return cached;
  try {
    // A lazy require (not a top-level import) is the point: see the comment above.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    cached = require('onnxruntime-node') as OrtModule;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === 'MODULE_NOT_FOUND' && String((e as Error).message).includes("'onnxruntime-node'")) {
      throw new Error(
        'microbatch/onnx needs the onnxruntime-node package, which is not installed. ' +
          'Install it next to microbatch: npm install onnxruntime-node',
        { cause: e },
      );
    }
    throw e;
  }
  return cached;
}
