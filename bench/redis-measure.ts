/** What the Redis scenarios measure of one repetition, shared by bench/redis.ts and bench/redis-capacity.ts. */
import type { ModelHost } from '../src/engine/model-host';
import { closedLoop, Samples, summarize } from './harness';

/** One repetition's figures. */
export interface RedisRep {
  readonly throughput: number;
  readonly p50: number;
  readonly p99: number;
  readonly meanBatch: number;
  readonly failed: number;
}

/** One closed-loop repetition of `callers` through `call`, counting the batches `hosts` ran. */
export async function measureRoute(hosts: ReadonlyArray<ModelHost<number, number>>, callers: number, durationMs: number, call: (i: number) => Promise<unknown>): Promise<RedisRep> {
  const before = hosts.map((h) => [h.stats.batches, h.stats.rows] as const);
  const latencies = new Samples();
  const r = await closedLoop({ clients: callers, durationMs, latencies, call });
  let batches = 0;
  let rows = 0;
  hosts.forEach((h, i) => {
    batches += h.stats.batches - before[i]![0];
    rows += h.stats.rows - before[i]![1];
  });
  const s = summarize(latencies.values());
  return { throughput: r.throughput, p50: s.p50, p99: s.p99, meanBatch: rows / Math.max(1, batches), failed: r.failed };
}
