import type { Batcher } from '../core/batcher';
import { describe, toError } from '../core/describe';
import type { RequestOptions } from '../core/options';

/** What cutting a request into parts needs from the batcher (see `Batcher.sliceRows`). @internal */
export interface RowSlicer<In, Out> {
  sliceRows(item: In, start: number, count: number): In;
  joinRows(parts: readonly Out[]): Out;
}

/**
 * The `splitOversize` option composed around a host's submit: returns what runs a request too
 * large for one batch (see {@link runInParts}), or throws when the batcher cannot cut and join.
 * @internal
 */
export function oversizeSplitter<In, Out>(
  name: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's types are its own business
  batcher: Batcher<In, Out, any, any, any>,
  submit: (item: In, options: RequestOptions) => Promise<Out>,
): (item: In, rows: number, maxRows: number, options: RequestOptions | undefined) => Promise<Out> {
  if (typeof batcher.sliceRows !== 'function' || typeof batcher.joinRows !== 'function') {
    throw new TypeError(
      `${name}: splitOversize needs a batcher that can cut a request into rows and join the parts' results ` +
        `(sliceRows and joinRows, as ConcatBatcher has); ${describe(batcher)} has ${typeof batcher.sliceRows === 'function' ? 'no joinRows' : 'no sliceRows'}`,
    );
  }
  const slicer: RowSlicer<In, Out> = { sliceRows: batcher.sliceRows.bind(batcher), joinRows: batcher.joinRows.bind(batcher) };
  return (item, rows, maxRows, options) => runInParts(submit, slicer, item, rows, maxRows, options);
}

/**
 * Runs a request of `rows` rows, more than `maxRows`, as consecutive parts of at most `maxRows`
 * rows each, submitted back to back (so they queue together and run in consecutive batches), and
 * answers with their results joined in order. The first part to fail rejects the whole request
 * with its error and aborts the parts still waiting: nobody wants the rest of an answer that can
 * no longer be given.
 * @internal
 */
export function runInParts<In, Out>(
  submit: (item: In, options: RequestOptions) => Promise<Out>,
  slicer: RowSlicer<In, Out>,
  item: In,
  rows: number,
  maxRows: number,
  options: RequestOptions | undefined,
): Promise<Out> {
  const slices: In[] = [];
  try {
    for (let start = 0; start < rows; start += maxRows) slices.push(slicer.sliceRows(item, start, Math.min(maxRows, rows - start)));
  } catch (e) {
    return Promise.reject(toError(e, "The batcher's sliceRows"));
  }
  const cancel = new AbortController();
  const signal = options?.signal === undefined ? cancel.signal : AbortSignal.any([options.signal, cancel.signal]);
  const parts = slices.map((slice) => submit(slice, { ...options, signal }));
  return Promise.all(parts).then(
    (results) => {
      try {
        return slicer.joinRows(results);
      } catch (e) {
        throw toError(e, "The batcher's joinRows");
      }
    },
    (error: unknown) => {
      cancel.abort(error);
      throw error;
    },
  );
}
