// A replica that dies is noticed by its heartbeat, not by claimIdleMs (30 s by default): with the
// documented defaults its callers are answered by another replica within a few seconds, the entries
// whose callers are gone are cleared (XPENDING back to 0, as KEDA counts it), and the dead consumer
// leaves the group. A replica that is slow but alive keeps its heartbeat and its work.
import { ModelHost } from '../../../src';
import { encodeRequest } from '../../../src/remote/redis/entry';
import { serveHost, type RedisTakeover } from '../../../src/remote/redis';
import { describeWithRedis } from '../../support/redis-server';
import { waitFor } from '../../support/wait-for';
import { useRedisFixture } from './redis-fixture';

interface Item {
  readonly v: number;
  readonly hold?: string;
}
interface Answer {
  readonly v: number;
  readonly by: string;
}

const stream = (model: string): string => `mb:{${model}}:req`;

describeWithRedis('takeover after a replica dies (heartbeat)', () => {
  const f = useRedisFixture<Item, Answer>('t');
  const pendingCount = async (): Promise<number> => Number(((await f.raw.sendCommand(['XPENDING', stream(f.model), 'replicas'])) as unknown[])[0]);
  async function consumers(): Promise<string[]> {
    const list = (await f.raw.sendCommand(['XINFO', 'CONSUMERS', stream(f.model), 'replicas'])) as unknown[][];
    return list.map((c) => String(c[c.indexOf('name') + 1]));
  }

  test('a SIGKILLed replica with the default options: its callers are answered within seconds, its stale entries cleared, it leaves the group', async () => {
    const go = `${f.model}:go`;
    const calls = Array.from({ length: 5 }, (_, i) => f.front.inference({ v: i + 1, hold: go }));
    // Two callers that give up before the takeover: their entries must not stay pending.
    const giveUp = new AbortController();
    const gone = [6, 7].map((v) => f.front.inference({ v, hold: go }, { signal: giveUp.signal }).catch((e: unknown) => e as Error));
    await waitFor(() => f.front.stats.sent === 7, 20_000, 'all sent');
    const a = await f.replica('a');
    await a.batchesStarted(1);
    expect(a.batches[0]).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const b = await f.replica('b');
    giveUp.abort();
    a.process.kill('SIGKILL');
    await a.exited;
    const killedAt = Date.now();
    await f.raw.set(go, '1');
    const answers = await Promise.all(calls);
    // heartbeatTtlMs (2 s) and five runs; claimIdleMs (30 s) would take far longer. Generous for a busy machine.
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(answers).toEqual([1, 2, 3, 4, 5].map((v) => ({ v: 2 * v, by: 'b' })));
    for (const e of await Promise.all(gone)) expect((e as Error).name).toBe('AbortError');
    await waitFor(async () => (await pendingCount()) === 0 && !(await consumers()).includes('a'), 5_000, 'XPENDING back to 0 and a gone');
    expect(await consumers()).toEqual(['b']);
    expect(Number(await f.raw.sendCommand(['XLEN', stream(f.model)]))).toBe(0);
    expect(await f.raw.sendCommand(['ZSCORE', `mb:{${f.model}}:replicas`, 'a'])).toBeNull();
    await b.stop();
    expect(b.stats).toMatchObject({ reclaimed: 5, cleared: 2, answered: 5 });
    expect(b.stats!.takeovers).toBeGreaterThanOrEqual(1);
    expect(f.front.stats.duplicatesDropped).toBe(0);
  }, 30_000);

  test('a slow but living replica (a batch longer than heartbeatTtlMs) is not robbed', async () => {
    const go = `${f.model}:go`;
    const takeovers: RedisTakeover[] = [];
    const slow = new ModelHost(
      async (items: readonly Item[]) => {
        while ((await f.raw.exists(go)) === 0) await new Promise((r) => setTimeout(r, 20));
        return items.map((i) => ({ v: i.v * 2, by: 'slow' }));
      },
      { maxBatchSize: 8 },
    );
    const idle = new ModelHost(async (items: readonly Item[]) => items.map((i) => ({ v: i.v * 2, by: 'idle' })), { maxBatchSize: 8 });
    const calls = [1, 2, 3].map((v) => f.front.inference({ v, hold: go }));
    await waitFor(async () => Number(await f.raw.sendCommand(['XLEN', stream(f.model)])) === 3, 5_000, 'all in the stream');
    const a = await serveHost(slow, { url: f.redis.url, model: f.model, consumer: 'slow', heartbeatTtlMs: 500, blockMs: 100 });
    await waitFor(() => a.stats.inFlight === 3, 5_000, 'the slow replica holds the batch');
    const b = await serveHost(idle, { url: f.redis.url, model: f.model, consumer: 'idle', heartbeatTtlMs: 500, blockMs: 100, onTakeover: (t) => takeovers.push(t) });
    try {
      await new Promise((r) => setTimeout(r, 2_000)); // four heartbeat lifetimes
      expect(b.stats).toMatchObject({ reclaimed: 0, takeovers: 0 });
      expect(takeovers).toEqual([]);
      expect(await pendingCount()).toBe(3);
      await f.raw.set(go, '1');
      expect(await Promise.all(calls)).toEqual([1, 2, 3].map((v) => ({ v: 2 * v, by: 'slow' })));
      await waitFor(() => a.stats.answered === 3, 5_000, 'the slow replica counted its answers');
      expect(a.stats).toMatchObject({ refused: 0, reclaimed: 0 });
    } finally {
      await Promise.all([a.close(), b.close()]);
      await Promise.all([slow.stop(), idle.stop()]);
    }
  }, 30_000);

  test('the entries of a dead consumer: past their deadline or withdrawn are cleared, the others claimed one at a time; onTakeover says so', async () => {
    const takeovers: RedisTakeover[] = [];
    await f.raw.sendCommand(['XGROUP', 'CREATE', stream(f.model), 'replicas', '0', 'MKSTREAM']).catch(() => undefined);
    const add = (requestId: string, timeoutMs: number | undefined, v: number): Promise<unknown> =>
      f.raw.sendCommand(['XADD', stream(f.model), '*', ...(encodeRequest({ frontEnd: f.front.id, requestId, timeoutMs, priority: undefined }, { v }) as string[])]);
    // A replica that read four entries and died without ever sending a heartbeat here.
    const expired = String(await add('9000', 50, 0));
    const kept = String(await add('9001', undefined, 1));
    const withdrawn = String(await add('9002', undefined, 2));
    await add('9003', undefined, 3);
    await f.raw.sendCommand(['XREADGROUP', 'GROUP', 'replicas', 'ghost', 'COUNT', '10', 'STREAMS', stream(f.model), '>']);
    await f.raw.sendCommand(['XDEL', stream(f.model), withdrawn]);
    await new Promise((r) => setTimeout(r, 100)); // x0's deadline passes
    const batches: number[] = [];
    const counted = new ModelHost(async (items: readonly Item[]) => {
      batches.push(items.length);
      return items.map((i) => ({ v: i.v * 2, by: 'b' }));
    }, { maxBatchSize: 8 });
    const b = await serveHost(counted, { url: f.redis.url, model: f.model, consumer: 'b', heartbeatTtlMs: 200, onTakeover: (t) => takeovers.push(t) });
    try {
      await waitFor(async () => (await pendingCount()) === 0 && !(await consumers()).includes('ghost'), 5_000, 'ghost cleared and removed');
      await waitFor(() => b.stats.answered === 2, 5_000, 'two answered');
      expect(batches).toEqual([1, 1]); // taken-over entries run alone
      expect(b.stats).toMatchObject({ reclaimed: 2, cleared: 2, answered: 2 });
      expect(takeovers.every((t) => t.from === 'ghost' && t.reason === 'heartbeat')).toBe(true);
      expect(takeovers.reduce((n, t) => n + t.cleared, 0)).toBe(2);
      expect(takeovers.flatMap((t) => t.claimed)).toEqual([kept, expect.any(String)]);
      expect(takeovers.at(-1)!.removed).toBe(true);
      expect(b.stats.takeovers).toBe(takeovers.length);
      expect(Number(await f.raw.sendCommand(['XLEN', stream(f.model)]))).toBe(0);
      expect(await f.raw.sendCommand(['XRANGE', stream(f.model), expired, expired])).toEqual([]);
    } finally {
      await b.close();
      await counted.stop();
    }
  }, 30_000);
});
