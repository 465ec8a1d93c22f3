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
