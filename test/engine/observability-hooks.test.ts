import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { AsyncLocalStorage } from 'node:async_hooks';
import { ModelHost } from '../../src/engine/model-host';
import type { Batcher } from '../../src/core/batcher';
import { DeadlineExceededError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import { CHANNELS, type BatchEvent, type RequestEvent } from '../../src/core/observer';
import type { QueuedRequestInfo, ReleasePolicy } from '../../src/core/policy';
import { ControlledModel, settle } from '../support/controlled-model';

describe('policy hooks', () => {
  test('a policy can shed waiting requests; they reject with reason shed and never run', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const seenLatency: number[] = [];
    const policy: ReleasePolicy = {
      name: 'picky',
      decide: (q) => {
        seenLatency.push(q.maxLatencyMs);
        const old: QueuedRequestInfo[] = [...q.requests()].filter((r) => q.now - r.enqueuedAt >= 10);
        return { release: true, maxRows: q.maxBatchSize, reason: 'idle', shed: old };
      },
      latencyModel: { predict: (rows) => rows * 2 },
    };
    const settled: RequestEvent[] = [];
    const host = new ModelHost(model.fn, { maxBatchSize: 4, clock, policy, maxLatencyMs: 50, name: 'p', observer: { onRequest: (r) => settled.push(r) } });
    host.inference(0);
    await settle();
    const stale = host.inference(1);
    clock.advance(10);
    const fresh = host.inference(2);
    model.answer(0, (x) => x);
    await expect(stale).rejects.toThrow(
      new DeadlineExceededError(
        "p: shed by prediction after 10 ms in the queue: the 'picky' policy predicted it could not finish within its latency budget (maxLatencyMs or timeoutMs); it never ran",
        'shed',
        'queued',
        10,
      ),
    );
    await expect(stale).rejects.toMatchObject({ reason: 'shed', phase: 'queued' });
    await settle();
    expect(model.last.items).toEqual([2]);
    model.answer(1, (x) => x * 3);
    await expect(fresh).resolves.toBe(6);
    expect(host.stats.rejected.deadline).toBe(1);
    // Reported as shed, with its whole life spent in the queue.
    expect(settled.filter((r) => r.outcome === 'shed').map((r) => [r.queueMs, r.runMs, r.totalMs])).toEqual([[10, 0, 10]]);
    expect(seenLatency.every((v) => v === 50)).toBe(true);
    expect(host.latencyModel?.predict(3)).toBe(6);
  });

  test('shedding everything that waits leaves the host idle, not running an empty batch', async () => {
    const model = new ControlledModel<number, number>();
    const host = new ModelHost(model.fn, {
      maxBatchSize: 4,
      policy: { name: 'shed-all', decide: (q) => ({ release: true, maxRows: 4, reason: 'idle', shed: [...q.requests()] }) },
    });
    const ps = [host.inference(1), host.inference(2)];
    for (const p of ps) await expect(p).rejects.toMatchObject({ reason: 'shed' });
    expect(model.calls).toHaveLength(0);
    await host.onIdle();
    expect(host.latencyModel).toBeUndefined();
  });
});

describe('observer hooks', () => {
  test('captureContext runs in the caller\'s async context and comes back with the batch', async () => {
    const als = new AsyncLocalStorage<string>();
    const batches: BatchEvent[] = [];
    const host = new ModelHost(async (xs: readonly number[]) => xs, {
      maxBatchSize: 4,
      observer: { captureContext: () => als.getStore(), onBatch: (b) => batches.push(b) },
    });
    await Promise.all([als.run('trace-a', () => host.inference(1)), als.run('trace-b', () => host.inference(2))]);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.contexts).toEqual(['trace-a', 'trace-b']);
    expect(batches[0]!.queued).toBe(0);
    expect(typeof batches[0]!.startedAt).toBe('number');
  });

  test('a batch event times the queue and each phase; request events time each request; stop() releases with reason drain', async () => {
    const clock = new ManualClock();
    const batches: BatchEvent[] = [];
    const requests: RequestEvent[] = [];
    // Merge and split take fake time here, so their share of the batch is visible and exact.
    const batcher: Batcher<number, number, number[], number[], undefined> = {
      merge: (items) => {
        clock.advance(1);
        return { batch: [...items], ctx: undefined, padding: 0.25 };
      },
      split: (out) => {
        clock.advance(2);
        return out;
      },
    };
    const host = new ModelHost(
      async (xs: number[]) => {
        clock.advance(5);
        return xs.map((x) => x * 2);
      },
      { maxBatchSize: 4, maxDelayMs: 100, clock, batcher, observer: { onBatch: (b) => batches.push(b), onRequest: (r) => requests.push(r) } },
    );
    const first = host.inference(1);
    clock.advance(4);
    const second = host.inference(2);
    await settle();
    clock.advance(6); // t = 10, inside the 100 ms window: only stopping releases them now
    await host.stop();
    await expect(Promise.all([first, second])).resolves.toEqual([2, 4]);
    expect(batches).toHaveLength(1);
    expect(batches[0]).toMatchObject({
      rows: 2,
      requests: 2,
      reason: 'drain',
      queueWaitOldestMs: 10,
      queueWaitMeanMs: 8,
      mergeMs: 1,
      runMs: 5,
      splitMs: 2,
      paddingWaste: 0.25,
      queued: 0,
      startedAt: 10,
    });
    expect(requests.map((r) => [r.outcome, r.queueMs, r.runMs, r.totalMs])).toEqual([
      ['ok', 10, 8, 18],
      ['ok', 6, 8, 14],
    ]);
  });

  test('batch and request events are published on diagnostics channels, with no observer set', async () => {
    const batches: BatchEvent[] = [];
    const requests: RequestEvent[] = [];
    const onBatch = (m: unknown) => batches.push(m as BatchEvent);
    const onRequest = (m: unknown) => requests.push(m as RequestEvent);
    subscribe(CHANNELS.batch, onBatch);
    subscribe(CHANNELS.request, onRequest);
    try {
      const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => (x < 0 ? new Error('neg') : x)), { maxBatchSize: 4, name: 'chan' });
      await Promise.allSettled([host.inference(1), host.inference(-1)]);
      await host.stop();
      await host.inference(3).catch(() => undefined);
    } finally {
      unsubscribe(CHANNELS.batch, onBatch);
      unsubscribe(CHANNELS.request, onRequest);
    }
    expect(batches.map((b) => [b.host, b.rows, b.succeeded, b.failed, b.contexts])).toEqual([['chan', 2, 1, 1, []]]);
    expect(requests.map((r) => [r.host, r.outcome])).toEqual([
      ['chan', 'ok'],
      ['chan', 'error'],
      ['chan', 'stopped'],
    ]);
  });
});
