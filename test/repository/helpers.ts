import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { linearModel } from '../support/onnx-models';

/**
 * A model repository in a temp folder, built by the test: `model(name, versions, config?)` writes
 * `<name>/config.pbtxt` (when given) and a linear model (`X [N, 4]` → `Y [N, 3]`, weights seeded by
 * the version, so each version answers differently) in each version folder.
 */
export function tempRepository(): {
  dir: string;
  model(name: string, versions: readonly number[], config?: string): void;
  version(name: string, version: number, seed?: number): void;
  cleanup(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'mb-repo-'));
  const version = (name: string, v: number, seed = v): void => {
    mkdirSync(join(dir, name, String(v)), { recursive: true });
    writeFileSync(join(dir, name, String(v), 'model.onnx'), linearModel(4, 3, seed));
  };
  return {
    dir,
    model(name, versions, config) {
      mkdirSync(join(dir, name), { recursive: true });
      if (config !== undefined) writeFileSync(join(dir, name, 'config.pbtxt'), config);
      for (const v of versions) version(name, v);
    },
    version,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** One row of the linear model's input. */
export function row(values: readonly number[] = [1, 2, 3, 4]): { X: Tensor } {
  return { X: new Tensor('float32', Float32Array.from(values), [1, 4]) };
}

/** Host defaults for tests: on this thread, one onnxruntime thread. */
export const TEST_DEFAULTS = { maxBatchSize: 8, workers: 0, threads: 1 };
