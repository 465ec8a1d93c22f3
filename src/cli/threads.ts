/**
 * onnxruntime threads per worker when `--threads` is not given: the cores less one (the event
 * loop's, which docs/executors.md measured: model threads on every core starve it), shared among
 * the workers, at least one each. Inline (`workers` 0) counts as one.
 * @internal
 */
export function defaultThreads(cores: number, workers: number): number {
  return Math.max(1, Math.floor((cores - 1) / Math.max(1, workers)));
}
