/**
 * The DI token for a loaded onnxruntime `InferenceSession`: provide it in `createHost`'s context
 * and inject it with `@inject(OnnxSession)`. A plain symbol, so the core never imports
 * onnxruntime (a peer dependency); registered with `Symbol.for`, so two copies of microbatch in
 * one process still agree on it.
 *
 * @example
 * ```ts
 * @injectable()
 * class Classifier {
 *   constructor(@inject(OnnxSession) private readonly session: InferenceSession) {}
 *   @batching(32) async predictBatch(rows: readonly Float32Array[]) { ... }
 * }
 * const host = await createHost(Classifier, {
 *   context: { [OnnxSession]: () => InferenceSession.create('model.onnx') }, // released on stop()
 * });
 * ```
 */
export const OnnxSession: unique symbol = Symbol.for('microbatch.OnnxSession');

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
