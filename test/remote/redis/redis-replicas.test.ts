// Replicas in child processes against a real redis-server: where work goes, and what happens when
// a replica is killed, stalled, or fed a poison input. Every caller must get exactly one answer.
import { DeliveryLimitError } from '../../../src';
import type { ChildReplica } from '../../support/child-replica';
import { describeWithRedis } from '../../support/redis-server';
import { waitFor } from '../../support/wait-for';
import { useRedisFixture } from './redis-fixture';

interface Item {
  readonly v: number;
  readonly hold?: string;
  readonly crash?: boolean;
}
interface Answer {
  readonly v: number;
  readonly by: string;
}

describeWithRedis('replicas in child processes', () => {
  const f = useRedisFixture<Item, Answer>('r');
  const replica = (name: string, extra?: { claimIdleMs?: number; maxDeliveries?: number }): Promise<ChildReplica> => f.replica(name, extra);

  test('while one replica runs a long batch, new work goes to the idle one; the busy one takes at most its next batch ahead', async () => {
    const a = await replica('a'); // maxBatchSize 8
    const long = f.front.inference({ v: 1, hold: `${f.model}:go` });
    await a.batchesStarted(1);
    await replica('b');
    const answered: Answer[] = [];
    const shorts = Array.from({ length: 12 }, (_, i) => f.front.inference({ v: 10 + i }).then((r) => (answered.push(r), r)));
    // The idle replica answers what it was handed while the long batch still runs. The busy one
    // reads ahead only what waits in the stream when nobody is blocked in a read (here: between
    // two of b's batches), at most its next batch; that runs once its own batch ends.
    await waitFor(() => answered.length >= 12 - 8, 30_000, 'the idle replica answers');
    expect(answered.every((r) => r.by === 'b')).toBe(true);
    expect(a.batches).toEqual([[1]]); // nothing started beside the long batch
    await f.raw.set(`${f.model}:go`, '1');
    await expect(long).resolves.toEqual({ v: 2, by: 'a' });
    const all = await Promise.all(shorts);
    expect(all.map((s) => s.v)).toEqual(Array.from({ length: 12 }, (_, i) => 2 * (10 + i)));
    expect(all.filter((s) => s.by === 'a').length).toBeLessThanOrEqual(8);
    expect(f.front.stats.duplicatesDropped).toBe(0);
  }, 60_000);

  test('a replica SIGKILLed right after it pulled a batch: another takes the work over, each caller gets one correct answer', async () => {
    const calls = Array.from({ length: 6 }, (_, i) => f.front.inference({ v: i + 1, hold: `${f.model}:go` }));
    await waitFor(() => f.front.stats.sent === 6, 20_000, 'all sent');
    const a = await replica('a', { claimIdleMs: 1_000 });
    await a.batchesStarted(1);
    expect(a.batches[0]).toEqual([1, 2, 3, 4, 5, 6]);
    a.process.kill('SIGKILL');
    await a.exited;
    await f.raw.set(`${f.model}:go`, '1');
    const b = await replica('b', { claimIdleMs: 1_000 });
    const answers = await Promise.all(calls);
    expect(answers).toEqual([1, 2, 3, 4, 5, 6].map((v) => ({ v: 2 * v, by: 'b' })));
    expect(b.batches.every((batch) => batch.length === 1)).toBe(true); // taken-over entries run alone
    expect(f.front.stats.duplicatesDropped).toBe(0);
    expect(await f.raw.sendCommand(['XLEN', `mb:{${f.model}}:req`])).toBe(0);
  }, 60_000);

  test('a replica SIGSTOPped past claimIdleMs and then resumed: its late answers are refused, callers get one answer each', async () => {
    const calls = Array.from({ length: 4 }, (_, i) => f.front.inference({ v: i + 1, hold: `${f.model}:go` }));
    await waitFor(() => f.front.stats.sent === 4, 20_000, 'all sent');
    const a = await replica('a', { claimIdleMs: 800 });
    await a.batchesStarted(1);
    a.process.kill('SIGSTOP');
    await f.raw.set(`${f.model}:go`, '1');
    await replica('b', { claimIdleMs: 800 });
    const answers = await Promise.all(calls);
    expect(answers).toEqual([1, 2, 3, 4].map((v) => ({ v: 2 * v, by: 'b' })));
    a.process.kill('SIGCONT');
    await a.stop();
    expect(a.stats).toMatchObject({ refused: 4, answered: 0 });
    expect(f.front.stats.duplicatesDropped).toBe(0);
  }, 60_000);

  test('a poison input in a full batch gets DeliveryLimitError after maxDeliveries; its batch-mates succeed', async () => {
    const calls = [1, 2, 3, 66, 5, 6, 7, 8].map((v) => f.front.inference(v === 66 ? { v, crash: true } : { v }).catch((e: unknown) => e as Error));
    await waitFor(() => f.front.stats.sent === 8, 20_000, 'all sent');
    const settled = Promise.all(calls);
    let done = false;
    void settled.then(() => (done = true));
    // A supervisor restarts a replica each time one dies, as Kubernetes would.
    let started = 0;
    const all: ChildReplica[] = [];
    while (!done) {
      const r = await replica(`n${++started}`, { claimIdleMs: 400, maxDeliveries: 2 });
      all.push(r);
      await Promise.race([r.exited, settled]);
      if (started > 6) throw new Error('the poison input was not contained');
    }
    const results = await settled;
    const poison = results[3] as unknown as DeliveryLimitError;
    expect(poison).toBeInstanceOf(DeliveryLimitError);
    expect(poison.deliveries).toBe(2);
    results.forEach((r, i) => {
      if (i !== 3) expect((r as unknown as Answer).v).toBe(2 * [1, 2, 3, 66, 5, 6, 7, 8][i]!);
    });
    expect(all[0]!.batches[0]).toHaveLength(8); // the first replica died on the full batch
    for (const r of all.slice(1)) expect(r.batches.every((b) => b.length === 1)).toBe(true);
    expect(f.front.stats.duplicatesDropped).toBe(0);
  }, 90_000);
});
