/**
 * How many onnxruntime intra-op threads each of `workers` sessions gets by default: the cores less
 * one (the event loop's: model threads on every core starve it, and with it every answer and
 * arrival; docs/executors.md, "Threads"), shared among the workers, at least one each. Inline
 * (`workers` 0) counts as one session.
 * @internal
 */
export function sharedMachineThreads(cores: number, workers: number): number {
  return Math.max(1, Math.floor((cores - 1) / Math.max(1, workers)));
}

/**
 * The threads per session of the `'dedicated'` machine preset: every core shared among the
 * sessions, nothing kept back for the event loop (its pool threads spin-wait between runs too).
 * @internal
 */
export function dedicatedMachineThreads(cores: number, workers: number): number {
  return Math.max(1, Math.floor(cores / Math.max(1, workers)));
}
