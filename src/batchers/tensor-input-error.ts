import { MicrobatchError } from '../core/errors';

/**
 * A request's tensors cannot join the batch: not a tensor, data that does not fit its dims, a
 * rank too small for the batch axis, a shape the batcher was told to refuse, keys that differ from
 * the batch's... Only that request is rejected; the rest of the batch runs.
 *
 * @example
 * ```ts
 * await host.inference({ type: 'float32', data: new Float32Array(5), dims: [1, 4] }).catch((e) => {
 *   if (e instanceof TensorInputError) console.log(e.input, e.expected, e.actual);
 *   // "the input", "4 elements for dims [1, 4]", "data of length 5"
 * });
 * ```
 */
export class TensorInputError extends MicrobatchError {
  /** Which input was at fault: `the input`, `input[1]` (a tuple) or `input "name"` (a record). */
  readonly input: string;
  /** What the batcher expected. */
  readonly expected: string;
  /** What came instead. */
  readonly actual: string;

  constructor(where: string, input: string, expected: string, actual: string) {
    super(`${where}: ${input}: expected ${expected}, got ${actual}`);
    this.input = input;
    this.expected = expected;
    this.actual = actual;
  }
}
