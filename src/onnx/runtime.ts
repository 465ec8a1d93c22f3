import type * as Ort from 'onnxruntime-node';
import { requireOptionalPeer } from '../core/optional-peer';

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
  // A lazy require (not a top-level import) is the point: see the comment above.
  cached ??= requireOptionalPeer<OrtModule>('onnxruntime-node', 'microbatch/onnx');
  return cached;
}
