import { MicrobatchError } from '../core/errors';

/**
 * onnxruntime could not create a session: the file is missing, or the bytes are not a model it
 * can load. `cause` holds onnxruntime's own error when there is one.
 *
 * @example
 * ```ts
 * try { await loadSession('model.onnx'); }
 * catch (e) { if (e instanceof ModelLoadError) console.error(e.message); }
 * ```
 */
export class ModelLoadError extends MicrobatchError {}

/**
 * The model has no input that can be batched: its batch dimension is fixed (often to 1, as
 * exported), or none of its inputs has a symbolic (dynamic) dimension. Such a model still runs
 * one request at a time with `maxBatchSize: 1`. `input` and `dims` name the offending input.
 *
 * @example
 * ```ts
 * await createOnnxHost('fixed.onnx', { maxBatchSize: 8 }); // throws UnbatchableModelError
 * await createOnnxHost('fixed.onnx', { maxBatchSize: 1 }); // runs, one request per model call
 * ```
 */
export class UnbatchableModelError extends MicrobatchError {
  /** The input whose shape rules out batching. */
  readonly input: string;
  /** Its dims as the model declares them (symbolic ones as strings). */
  readonly dims: ReadonlyArray<number | string>;
  constructor(message: string, input: string, dims: ReadonlyArray<number | string>) {
    super(message);
    this.input = input;
    this.dims = dims;
  }
}
