import type { Batcher, Merged } from '../core/batcher';
import { describe } from '../core/describe';

/** Options of {@link ListBatcher}. */
export interface ListBatcherOptions<In> {
  /**
   * Rows in one item, counted against `maxBatchSize` (for items that are themselves small batches).
   * @default every item is 1 row
   */
  rows?: (item: In) => number;
}

/**
 * The default batcher: the batch function receives the items as an array and returns an array
 * with one result (or `Error`) per item, in the same order, as with DataLoader.
 *
 * @example
 * ```ts
 * const host = new ModelHost(async (texts: readonly string[]) => texts.map((t) => t.length), {
 *   maxBatchSize: 32,
 *   batcher: new ListBatcher<string, number>(), // the same as leaving it out
 * });
 * ```
 */
export class ListBatcher<In, Out>
  implements Batcher<In, Out, readonly In[], ReadonlyArray<Out | Error>, number>
{
  readonly rows?: (item: In) => number;

  constructor(options: ListBatcherOptions<In> = {}) {
    if (options.rows !== undefined) {
      if (typeof options.rows !== 'function') {
        throw new TypeError(`ListBatcher: expected \`rows\` to be a function (item) => number, got ${describe(options.rows)}`);
      }
      this.rows = options.rows;
    }
  }

  merge(items: readonly In[]): Merged<readonly In[], number> {
    return { batch: items, ctx: items.length };
  }

  split(output: ReadonlyArray<Out | Error>, count: number): ReadonlyArray<Out | Error> {
    if (!Array.isArray(output)) {
      throw new TypeError(
        `The batch function must return (a promise of) an array with one result or Error per item, ` +
          `in item order; for ${count} items it returned ${describe(output)}`,
      );
    }
    return output;
  }
}
