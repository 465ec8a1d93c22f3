// A key's batcher inside DictBatcher: what a key may be batched by (KeyAxis), and the checks and
// error restatements that make a per-key batcher's failure name its key and its request.
import type { Batcher, Merged } from '../core/batcher';
import { describe, toError } from '../core/describe';
import { isTensorLike, tensorFault, type CheckedTensor, type TensorLike } from '../tensor/tensor-like';
import { TensorInputError } from './tensor-input-error';
import { inputLabel } from './tensor-items';

const WHERE = 'DictBatcher';

/**
 * How {@link DictBatcher} batches one input key:
 *
 * - a non-negative integer: the key's batch axis. The key's tensors are concatenated along it,
 *   and must have equal other dims to share a model call.
 * - `'shared'`: not batched. Passed to the model once per sub-batch, from its first request;
 *   requests whose values differ (dtype, dims or data) run in separate sub-batches.
 * - a batcher over single tensors: a {@link PadBatcher} or {@link ConcatBatcher} with its default
 *   type parameters, or your own `Batcher` whose `merge` takes this key's tensors and returns one
 *   tensor. Its `rows` counts the key's rows (1 without it), its `merge` builds the key's batch
 *   tensor, its `partition`, if any, is composed with DictBatcher's own grouping, and its
 *   `padding` counts in the merged batch's padding. Its `split` is not called: outputs are cut
 *   along the axes of `outputs`, so a padded axis comes back padded.
 *
 * @example
 * ```ts
 * const inputs: Record<string, KeyAxis> = {
 *   input_ids: new PadBatcher({ padAxis: 1, padValue: 0 }), // int64 [1, T], T differs per request
 *   pixel_values: 0, // float32 [1, 3, 224, 224], concatenated on axis 0
 *   temperature: 'shared', // float32 [], one value per model call
 * };
 * ```
 */
export type KeyAxis = number | 'shared' | Batcher<TensorLike, unknown, TensorLike, unknown, unknown>;

/** A per-key batcher of {@link KeyAxis}. */
export type KeyBatcher = Exclude<KeyAxis, number | 'shared'>;

/** How messages name a key's batcher: its class (`PadBatcher`), or `batcher` for a plain object. */
export function kindOf(batcher: KeyBatcher): string {
  const name = (batcher as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : 'batcher';
}

/**
 * An error a key's batcher raised about one item, restated by DictBatcher so that it names the
 * key: the batcher sees a lone tensor and calls it `the input`.
 */
export function relay(name: string, batcher: KeyBatcher, thrown: unknown): TensorInputError {
  const error = toError(thrown, `The ${kindOf(batcher)} of ${inputLabel('record', name)}`);
  const out =
    error instanceof TensorInputError
      ? new TensorInputError(WHERE, inputLabel('record', name), error.expected, error.actual)
      : new TensorInputError(WHERE, inputLabel('record', name), `a tensor its ${kindOf(batcher)} accepts`, error.message);
  Object.defineProperty(out, 'cause', { value: error, writable: true, configurable: true });
  return out;
}

/** A key's batcher failing as a whole (its partition or merge threw something other than a refusal). */
export function keyFailure(name: string, batcher: KeyBatcher, step: string, thrown: unknown): Error {
  if (thrown instanceof TensorInputError) return relay(name, batcher, thrown);
  const error = toError(thrown, `The ${kindOf(batcher)} of ${inputLabel('record', name)}`);
  return new Error(`${WHERE}: the ${step} of the ${kindOf(batcher)} of ${inputLabel('record', name)} failed: ${error.message}`, { cause: error });
}

export function keyRows(name: string, batcher: KeyBatcher, tensor: CheckedTensor): number {
  if (batcher.rows === undefined) return 1;
  let rows: unknown;
  try {
    rows = batcher.rows(tensor);
  } catch (error) {
    throw relay(name, batcher, error);
  }
  if (typeof rows !== 'number' || !Number.isInteger(rows) || rows < 0) {
    throw new TypeError(`${WHERE}: the ${kindOf(batcher)} of ${inputLabel('record', name)} must count rows as a non-negative integer; its rows() returned ${describe(rows)}`);
  }
  return rows;
}

export function mergeKey(name: string, batcher: KeyBatcher, tensors: readonly CheckedTensor[]): { tensor: TensorLike; padding: number } {
  let merged: Merged<TensorLike, unknown>;
  try {
    merged = batcher.merge(tensors);
  } catch (error) {
    throw keyFailure(name, batcher, 'merge', error);
  }
  const fault = tensorFault(merged.batch);
  if (fault !== null) {
    // The likely cause: a PadBatcher with maskKey or lengthsKey, whose batch is a record.
    const hint = !isTensorLike(merged.batch) && typeof merged.batch === 'object' && merged.batch !== null && !Array.isArray(merged.batch) ? ' (a record: a per-key batcher may not add keys; send a mask as an input of its own)' : '';
    throw new TypeError(`${WHERE}: the ${kindOf(batcher)} of ${inputLabel('record', name)} must merge into one tensor: expected ${fault.expected}, got ${fault.actual}${hint}`);
  }
  const p = merged.padding;
  return { tensor: merged.batch, padding: typeof p === 'number' && p > 0 ? Math.min(p, 1) : 0 };
}

function isBatcher(value: unknown): value is KeyBatcher {
  if (typeof value !== 'object' || value === null) return false;
  const b = value as Record<string, unknown>;
  return typeof b.merge === 'function' && typeof b.split === 'function' && (b.rows === undefined || typeof b.rows === 'function') && (b.partition === undefined || typeof b.partition === 'function');
}

export function checkSpecs(option: 'inputs' | 'outputs', value: unknown): { readonly [name: string]: KeyAxis } {
  const kinds = option === 'inputs' ? "batch axis, 'shared' or batcher" : "batch axis or 'shared'";
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new TypeError(`${WHERE}: expected \`${option}\` to be a non-empty record of key → ${kinds}, got ${describe(value)}`);
  }
  for (const [name, spec] of Object.entries(value)) {
    if (spec === 'shared' || (typeof spec === 'number' && Number.isInteger(spec) && spec >= 0)) continue;
    if (option === 'inputs' && isBatcher(spec)) continue;
    let why = '';
    if (option === 'outputs' && isBatcher(spec)) why = ' (a batcher applies to inputs only; outputs are cut along an axis)';
    else if (option === 'inputs' && typeof spec === 'object' && spec !== null && !Array.isArray(spec)) {
      const b = spec as Record<string, unknown>;
      const missing = ['merge', 'split', 'rows', 'partition'].filter((m) => (m === 'merge' || m === 'split' ? typeof b[m] !== 'function' : b[m] !== undefined && typeof b[m] !== 'function'));
      why = ` whose ${missing.map((m) => `\`${m}\``).join(' and ')} ${missing.length > 1 ? 'are not functions' : 'is not a function'}`;
    }
    const expected = option === 'inputs' ? "a non-negative integer axis, 'shared' or a batcher (an object with `merge` and `split` methods)" : "a non-negative integer axis or 'shared'";
    throw new TypeError(`${WHERE}: expected \`${option}.${name}\` to be ${expected}, got ${describe(spec)}${why}`);
  }
  return { ...(value as Record<string, KeyAxis>) };
}
