/**
 * Injection token under which a worker started by `createHost(C, { executor: 'worker' })`
 * registers its {@link WorkerContext} (worker index, worker count, `intraOpNumThreads`), so that
 * context providers can size their session's threads:
 * `(c) => loadSession(path, { intraOpNumThreads: c.resolve(WorkerInfo).intraOpNumThreads })`.
 *
 * @example
 * ```ts
 * export const context = {
 *   [OnnxSession]: (c: DependencyContainer) =>
 *     loadSession('model.onnx', { intraOpNumThreads: c.resolve(WorkerInfo).intraOpNumThreads ?? 1 }), // microbatch/onnx
 * };
 * ```
 */
export const WorkerInfo: unique symbol = Symbol.for('microbatch.WorkerInfo');
