import type { Batcher } from '../core/batcher';
import { toError } from '../core/describe';
import { BatchSizeMismatchError } from '../core/errors';

/** Marks a result slot the pipeline has not filled yet (a result may legitimately be `undefined`). */
const UNSET: unique symbol = Symbol('unset');

/** What running one released batch produced. @internal */
export interface PipelineResult<Out> {
  /** One entry per item, in order. */
  readonly results: Array<Out | Error>;
  readonly mergeMs: number;
  readonly runMs: number;
  readonly splitMs: number;
  readonly modelCalls: number;
  /** Row-weighted mean padding fraction over the model calls. */
  readonly padding: number;
}

/**
 * The host's batch slots (`maxConcurrentBatches`), lent to a pipeline so that the groups of one
 * released batch can run at the same time on slots nobody else is using.
 * @internal
 */
export interface SlotLender {
  /** Takes a free slot; false when every slot is busy. */
  tryTake(): boolean;
  /** Gives back a slot taken with `tryTake`. */
  give(): void;
}

/** @internal */
export interface PipelineConfig<In, Out, Batch, BatchOut> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  readonly batcher: Batcher<In, Out, Batch, BatchOut, any>;
  readonly run: (batch: Batch) => BatchOut | PromiseLike<BatchOut>;
  readonly isolateErrors: boolean;
  readonly now: () => number;
  readonly name: string;
  /** Extra slots for a partitioned batch's groups; without it groups run one after another. */
  readonly slots?: SlotLender;
}

const NO_TIME = (): number => 0;

/**
 * Runs the items of one released batch through the batcher and the batch function: partition into
 * groups, then per group merge, run, split and check the result count. Never throws: every failure
 * becomes the Error of the items it concerns, so no caller is left unanswered.
 *
 * With `isolateErrors`, a group whose merge or batch function throws is re-run in halves until the
 * failing items are alone. Contract breaks (wrong result count, a split that throws) are not
 * bisected: they are the batch function's fault, not an item's.
 * @internal
 */
export function runPipeline<In, Out, Batch, BatchOut>(
  cfg: PipelineConfig<In, Out, Batch, BatchOut>,
  items: readonly In[],
  timed: boolean,
): Promise<PipelineResult<Out>> {
  // Not async itself: returning one async function's promise from another costs extra ticks.
  if (cfg.batcher.partition === undefined && !cfg.isolateErrors && !timed) return runSimple(cfg, items);
  return runGeneral(cfg, items, timed);
}

async function runGeneral<In, Out, Batch, BatchOut>(
  cfg: PipelineConfig<In, Out, Batch, BatchOut>,
  items: readonly In[],
  timed: boolean,
): Promise<PipelineResult<Out>> {
  const results = new Array<Out | Error | typeof UNSET>(items.length).fill(UNSET);
  const t = { mergeMs: 0, runMs: 0, splitMs: 0, modelCalls: 0, paddedRows: 0, rows: 0 };
  const batcher = cfg.batcher;
  const now = timed ? cfg.now : NO_TIME;

  const runGroup = async (indexes: readonly number[] | undefined, groupItems: readonly In[]): Promise<void> => {
    const assignAll = (error: Error): void => {
      for (let i = 0; i < groupItems.length; i++) results[indexes ? (indexes[i] as number) : i] = error;
    };
    const bisectOr = async (error: Error): Promise<void> => {
      if (!cfg.isolateErrors || groupItems.length < 2) return assignAll(error);
      const mid = groupItems.length >> 1;
      const all = indexes ?? groupItems.map((_, i) => i);
      await runGroup(all.slice(0, mid), groupItems.slice(0, mid));
      await runGroup(all.slice(mid), groupItems.slice(mid));
    };

    let start = now();
    let merged;
    try {
      merged = batcher.merge(groupItems);
    } catch (e) {
      t.mergeMs += now() - start;
      return bisectOr(toError(e, 'The batcher\'s merge'));
    }
    t.mergeMs += now() - start;

    start = now();
    let output: BatchOut;
    t.modelCalls++;
    try {
      output = await cfg.run(merged.batch);
    } catch (e) {
      t.runMs += now() - start;
      return bisectOr(toError(e, 'The batch function'));
    }
    t.runMs += now() - start;
    t.rows += groupItems.length;
    t.paddedRows += (merged.padding ?? 0) * groupItems.length;

    start = now();
    try {
      const split = checkedSplit(cfg, output, merged.ctx, groupItems.length);
      for (let i = 0; i < split.length; i++) results[indexes ? (indexes[i] as number) : i] = split[i] as Out | Error;
    } catch (e) {
      assignAll(toError(e, 'The batcher\'s split'));
    }
    t.splitMs += now() - start;
  };

  let groups: ReadonlyArray<ReadonlyArray<number>> | undefined;
  if (batcher.partition !== undefined) {
    const start = now();
    try {
      const partition = batcher.partition(items);
      for (const { index, error } of partition.rejected ?? []) results[index] = error;
      groups = partition.groups;
    } catch (e) {
      results.fill(toError(e, 'The batcher\'s partition'));
      groups = [];
    }
    t.mergeMs += now() - start;
  }

  if (groups === undefined) {
    await runGroup(undefined, items);
  } else {
    await runGroups(groups, (group) => runGroup(group, group.map((i) => items[i] as In)), cfg.slots);
  }

  for (let i = 0; i < results.length; i++) {
    if (results[i] === UNSET) {
      results[i] = new Error(`${cfg.name}: the batcher's partition placed item ${i} in no group and did not reject it`);
    }
  }
  return {
    results: results as Array<Out | Error>,
    mergeMs: t.mergeMs,
    runMs: t.runMs,
    splitMs: t.splitMs,
    modelCalls: t.modelCalls,
    padding: t.rows > 0 ? t.paddedRows / t.rows : 0,
  };
}

/**
 * Runs the groups of one batch in order on the batch's own slot, and at the same time on as many
 * extra slots as the host has free when the batch starts. A runner takes the next group when it
 * finishes one, so slow and fast groups share the slots; extra slots go back as soon as their
 * runner finds no group left.
 */
async function runGroups(
  groups: ReadonlyArray<ReadonlyArray<number>>,
  run: (group: ReadonlyArray<number>) => Promise<void>,
  slots: SlotLender | undefined,
): Promise<void> {
  let next = 0;
  const runner = async (): Promise<void> => {
    while (next < groups.length) await run(groups[next++] as ReadonlyArray<number>);
  };
  // The first runner starts its first group synchronously, so `next` already counts it here.
  const runners = [runner()];
  while (slots !== undefined && next < groups.length && slots.tryTake()) {
    runners.push(runner().finally(() => slots.give()));
  }
  await Promise.all(runners);
}

/**
 * The common case (one group, no bisection, nobody reading the timings) without the general
 * path's bookkeeping: this runs once per batch on the hot path.
 */
async function runSimple<In, Out, Batch, BatchOut>(cfg: PipelineConfig<In, Out, Batch, BatchOut>, items: readonly In[]): Promise<PipelineResult<Out>> {
  const failAll = (error: Error): PipelineResult<Out> => simpleResult<Out>(new Array<Error>(items.length).fill(error), 1, 0);
  let merged;
  try {
    merged = cfg.batcher.merge(items);
  } catch (e) {
    return simpleResult<Out>(new Array<Error>(items.length).fill(toError(e, "The batcher's merge")), 0, 0);
  }
  let output: BatchOut;
  try {
    output = await cfg.run(merged.batch);
  } catch (e) {
    return failAll(toError(e, 'The batch function'));
  }
  try {
    return simpleResult(checkedSplit(cfg, output, merged.ctx, items.length), 1, merged.padding ?? 0);
  } catch (e) {
    return failAll(toError(e, "The batcher's split"));
  }
}

function simpleResult<Out>(results: ReadonlyArray<Out | Error>, modelCalls: number, padding: number): PipelineResult<Out> {
  return { results: results as Array<Out | Error>, mergeMs: 0, runMs: 0, splitMs: 0, modelCalls, padding };
}

/** Splits and enforces the contract: exactly one result per item. */
function checkedSplit<In, Out, Batch, BatchOut>(
  cfg: PipelineConfig<In, Out, Batch, BatchOut>,
  output: BatchOut,
  ctx: unknown,
  count: number,
): ReadonlyArray<Out | Error> {
  const split = cfg.batcher.split(output, ctx);
  if (!Array.isArray(split) || split.length !== count) {
    const got = Array.isArray(split) ? split.length : 0;
    throw new BatchSizeMismatchError(
      `${cfg.name}: the batch function must return one result (or Error) per item, in item order; ` +
        `expected ${count} results for ${count} items, got ${Array.isArray(split) ? got : 'a non-array'}`,
      count,
      got,
    );
  }
  return split;
}
