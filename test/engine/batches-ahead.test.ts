import { join } from 'node:path';
import { ModelHost } from '../../src/engine/model-host';
import { AdaptivePolicy } from '../../src/core/adaptive-policy';
import { DeadlineExceededError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import type { BatchEvent } from '../../src/core/observer';
import type { Executor } from '../../src/executors/executor';
import { WorkerExecutor } from '../../src/executors/worker';
import { ControlledModel, settle } from '../support/controlled-model';
import type { Answer, Op } from '../fixtures/workers/behaviours.worker';

// An executor that holds batches ahead (a worker pool) gets the next full batch while one runs,
// so its model never waits for the host between batches; nothing else about batching changes.

/** `batchesAhead` null: a plain function's executor, which has no such property. */
function setup(options: Record<string, unknown> & { maxBatchSize: number }, batchesAhead: number | null = 1) {
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const events: BatchEvent[] = [];
  const executor: Executor<readonly number[], ReadonlyArray<number | Error>> = batchesAhead === null ? { run: model.fn } : { run: model.fn, batchesAhead };
  const host = new ModelHost<number, number>(executor, { ...options, clock, observer: { onBatch: (e: BatchEvent) => events.push(e) } } as never);
  return { clock, model, host, events };
}

describe('batches ahead of a free slot (Executor.batchesAhead)', () => {
  test('a full batch goes to the executor while one runs; the rest waits for a slot; FIFO and every answer hold', async () => {
    const { model, host, events } = setup({ maxBatchSize: 8 });
    const first = host.inference(-1);
    await settle();
    const ps = Array.from({ length: 20 }, (_, i) => host.inference(i));
    await settle();
    expect(model.sizes).toEqual([1, 8]); // the second is full: it went ahead
    expect(host.stats).toMatchObject({ queued: 12, running: 9, runningBatches: 2 });
    model.answer(0, (x) => x + 100);
    await settle();
    expect(model.sizes).toEqual([1, 8, 8]); // the ahead batch runs; the next full one goes ahead
    model.answer(1, (x) => x + 100);
    await settle();
    expect(model.sizes).toEqual([1, 8, 8]); // 4 left: a batch that could still grow waits for a slot
    model.answer(2, (x) => x + 100);
    await settle();
    expect(model.sizes).toEqual([1, 8, 8, 4]);
    model.answer(3, (x) => x + 100);
    await expect(first).resolves.toBe(99);
    await expect(Promise.all(ps)).resolves.toEqual(Array.from({ length: 20 }, (_, i) => i + 100));
    expect(model.calls.flatMap((c) => c.items).slice(1)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await settle();
    expect(events.map((e) => e.reason)).toEqual(['idle', 'full', 'full', 'idle']);
    expect(host.stats).toMatchObject({ queued: 0, running: 0, runningBatches: 0, batches: 4, requests: 21 });
  });

  test('never more than maxConcurrentBatches + batchesAhead batches at once', async () => {
    const { model, host } = setup({ maxBatchSize: 4, maxConcurrentBatches: 2 }, 2);
    const ps = Array.from({ length: 40 }, (_, i) => host.inference(i));
    await settle();
    expect(model.sizes).toEqual([4, 4, 4, 4]);
    expect(host.stats.queued).toBe(24);
    model.answer(0, (x) => x);
    await settle();
    expect(model.sizes).toEqual([4, 4, 4, 4, 4]);
    for (let i = 1; i < 10; i++) {
      model.answer(i, (x) => x);
      await settle();
    }
    await expect(Promise.all(ps)).resolves.toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  test('the run time reported for a batch sent ahead is the model\'s, not its wait behind the running batch', async () => {
    const { clock, model, host, events } = setup({ maxBatchSize: 4 });
    const ps = Array.from({ length: 8 }, (_, i) => host.inference(i));
    await settle();
    expect(model.sizes).toEqual([4, 4]);
    clock.advance(10);
    model.answer(0, (x) => x);
    await settle();
    clock.advance(5);
    model.answer(1, (x) => x);
    await Promise.all(ps);
    await settle();
    expect(events.map((e) => e.runMs)).toEqual([10, 5]);
  });

  test.each([
    ['an executor that does not hold batches ahead (a plain function)', {}, null],
    ['batchesAhead 0', {}, 0],
    ['the adaptive policy below overload (it plans with the slots it sees)', { policy: 'adaptive', maxLatencyMs: 1_000 }, 1],
    ['priority levels (a later request of a higher level may go first)', { priorities: { 1: { maxDelayMs: 0 } } }, 1],
    ['a host-side batchTimeoutMs (it would count the wait)', { batchTimeoutMs: 1_000 }, 1],
  ])('no batch goes ahead with %s', async (_name, options, ahead) => {
    const { model, host } = setup({ maxBatchSize: 4, ...options }, ahead);
    const ps = Array.from({ length: 12 }, (_, i) => host.inference(i));
    await settle();
    expect(model.sizes).toEqual([4]);
    for (let i = 0; i < 3; i++) {
      model.answer(i, (x) => x);
      await settle();
    }
    await expect(Promise.all(ps)).resolves.toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  test('the adaptive policy in overload: it releases only full batches then, so one goes ahead; the plan counts it as running', async () => {
    const policy = new AdaptivePolicy();
    // A line: 10 ms + 1 ms a row, a full batch of 4 in 14 ms; the budget is 60 ms.
    for (const rows of [1, 2, 4]) policy.observe({ rows, requests: rows, runMs: 10 + rows, ok: true });
    const { clock, model, host } = setup({ maxBatchSize: 4, policy, maxLatencyMs: 60 });
    const first = host.inference(-1);
    await settle();
    // Behind the running batch (predicted to end at 11), the 13th request's batch would end at 67
    // at best: a certain miss, refused on arrival, which starts the overload; the rest are refused
    // beyond 1.5 full batches waiting.
    const ps = Array.from({ length: 16 }, (_, i) =>
      host.inference(i).then(
        (v) => v,
        (e: unknown) => e,
      ),
    );
    await settle();
    expect(policy.stats).toMatchObject({ refusedCertainMiss: 1, refusedOverQueue: 3 });
    expect(model.sizes).toEqual([1]);
    clock.advance(11);
    model.answer(0, (x) => x);
    await settle();
    // The decision released a full batch and, in overload, the next full one went ahead.
    expect(model.sizes).toEqual([1, 4, 4]);
    expect(host.stats).toMatchObject({ runningBatches: 2, queued: 4 });
    for (let i = 1; i < 4; i++) {
      clock.advance(14);
      model.answer(i, (x) => x);
      await settle();
    }
    await expect(first).resolves.toBe(-1);
    const out = await Promise.all(ps);
    expect(out.slice(0, 12)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(out.slice(12).every((e) => e instanceof DeadlineExceededError && e.reason === 'shed')).toBe(true);
    expect(model.sizes).toEqual([1, 4, 4, 4]);
  });

  test('requests of several rows: a batch goes ahead with the rows that fit, and no further once less than a full batch waits', async () => {
    const model = new ControlledModel<number, number>();
    const batcher = {
      rows: (item: readonly number[]) => item.length,
      merge: (items: ReadonlyArray<readonly number[]>) => ({ batch: items.flat(), ctx: items.map((i) => i.length) }),
      split: (out: readonly number[], sizes: readonly number[]) => {
        let at = 0;
        return sizes.map((n) => out.slice(at, (at += n)));
      },
    };
    const host: ModelHost<readonly number[], number[]> = new ModelHost({ run: model.fn, batchesAhead: 1 } as never, { maxBatchSize: 4, batcher } as never);
    const first = host.inference([0]);
    await settle();
    const ps = [[1, 2, 3], [4, 5, 6]].map((x) => host.inference(x));
    await settle();
    expect(model.calls.map((c) => c.items)).toEqual([[0], [1, 2, 3]]); // 6 rows wait: the first 3 went ahead, 3 do not make a full batch
    for (let i = 0; i < 3; i++) {
      model.answer(i, (x) => -x);
      await settle();
    }
    await expect(first).resolves.toEqual([-0]);
    await expect(Promise.all(ps)).resolves.toEqual([[-1, -2, -3], [-4, -5, -6]]);
  });

  test('a reload to an executor that holds batches ahead starts sending them ahead', async () => {
    const { model, host } = setup({ maxBatchSize: 4 }, null);
    const next = new ControlledModel<number, number>();
    await host.reload({ run: next.fn, batchesAhead: 1 });
    const ps = Array.from({ length: 8 }, (_, i) => host.inference(i));
    await settle();
    expect([model.sizes, next.sizes]).toEqual([[], [4, 4]]);
    next.answer(0, (x) => x);
    next.answer(1, (x) => x);
    await expect(Promise.all(ps)).resolves.toEqual(Array.from({ length: 8 }, (_, i) => i));
  });

  test('stop() drains batches sent ahead and the queue behind them', async () => {
    const { model, host } = setup({ maxBatchSize: 4 });
    const ps = Array.from({ length: 10 }, (_, i) => host.inference(i));
    await settle();
    expect(model.sizes).toEqual([4, 4]);
    const stopped = host.stop();
    for (let i = 0; i < 3; i++) {
      model.answer(i, (x) => -x);
      await settle();
    }
    await stopped;
    expect(model.sizes).toEqual([4, 4, 2]);
    await expect(Promise.all(ps)).resolves.toEqual(Array.from({ length: 10 }, (_, i) => -i));
  });
});

describe('a worker pool holds one batch ahead per worker', () => {
  const MODULE = join(__dirname, '../fixtures/workers/behaviours.worker.ts');

  test('the next full batch waits in the pool and starts when the running one ends, one after another', async () => {
    const executor = new WorkerExecutor<readonly Op[], Array<Answer | Error>>({ module: MODULE, workers: 1, name: 'ahead' });
    expect(executor.batchesAhead).toBe(1);
    const host = new ModelHost<Op, Answer>(executor, { maxBatchSize: 4, maxConcurrentBatches: executor.workers });
    try {
      await host.start();
      const ps = Array.from({ length: 12 }, () => host.inference({ op: 'sleep', value: 40 }));
      await settle();
      expect(host.stats).toMatchObject({ runningBatches: 2, queued: 4 });
      expect(executor.stats).toMatchObject({ busy: 1, queued: 1 });
      const answers = await Promise.all(ps);
      const batches = [...new Map(answers.map((a) => [a.startedAt, a])).values()].sort((a, b) => a.startedAt - b.startedAt);
      expect(batches.map((b) => b.batchSize)).toEqual([4, 4, 4]);
      for (let i = 1; i < batches.length; i++) expect(batches[i]!.startedAt).toBeGreaterThanOrEqual(batches[i - 1]!.endedAt);
    } finally {
      await host.stop();
    }
  });
});
