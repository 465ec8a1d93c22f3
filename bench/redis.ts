/**
 * Scenario: scale-out through Redis. The same model behind four routes, side by side in one run:
 * an in-process host, the Unix-socket host (serveHost/connectHost), and Redis Streams with one and
 * with two replicas (serveHost/connectHost of microbatch/redis). 64 closed-loop callers; throughput,
 * p50/p99 and the mean batch size per route, and each route's ratio to the in-process host.
 *
 * The model sleeps `2 ms + 0.02 ms × rows` per batch: it stands for a model that runs elsewhere
 * (a GPU, another machine) and costs this CPU nothing, so that two replicas in one process really
 * are two models. What the routes add is then their own cost: encoding, Redis round trips, reads.
 * redis-server runs on this machine (needs Debian's redis-server).
 *
 *   npx ts-node bench/redis.ts --quick
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelHost } from '../src/engine/model-host';
import * as redisTransport from '../src/remote/redis';
import { connectHost, serveHost } from '../src/remote/socket';
import { redisUnavailable, startRedis } from '../test/support/redis-server';
import { measureRoute, type RedisRep } from './redis-measure';
import { alternate, fmt, main, median, pick, Progress, ratio, report, sleep, table, writeResults, type Side } from './harness';

const CLIENTS = 64;
const MAX_BATCH = 32;

type Rep = RedisRep;

function model(): ModelHost<number, number> {
  return new ModelHost(
    async (xs: readonly number[]) => {
      await sleep(2 + 0.02 * xs.length);
      return xs.map((x) => x + 1);
    },
    { maxBatchSize: MAX_BATCH },
  );
}

main(async (args) => {
  const why = redisUnavailable();
  if (why !== undefined) throw new Error(`the redis scenario needs redis-server: ${why}`);
  const reps = args.reps ?? pick(args, 3, 5);
  const durationMs = pick(args, 2_000, 5_000);
  const progress = new Progress('redis', args.progress);
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 'mb-bench-'));
  let model_ = 0;

  const measure = (hosts: ReadonlyArray<ModelHost<number, number>>, call: (i: number) => Promise<unknown>): Promise<Rep> => measureRoute(hosts, CLIENTS, durationMs, call);

  const local = model();
  const socketHost = model();
  const socketPath = join(dir, 'model.sock');
  const server = await serveHost(socketHost, { path: socketPath });
  const socketClient = await connectHost<number, number>(socketPath);

  const redisSide = async (replicas: number): Promise<{ side: Side<Rep>; close(): Promise<void> }> => {
    const name = `bench${++model_}`;
    const hosts = Array.from({ length: replicas }, () => model());
    const served = await Promise.all(hosts.map((h, i) => redisTransport.serveHost(h, { url: redis.url, model: name, consumer: `replica${i}`, blockMs: 100 })));
    const front = await redisTransport.connectHost<number, number>({ url: redis.url, model: name });
    return {
      side: { name: `Redis, ${replicas} replica${replicas > 1 ? 's' : ''}`, run: () => measure(hosts, (i) => front.inference(i)) },
      async close() {
        await front.close();
        await Promise.all(served.map((s) => s.close()));
        await Promise.all(hosts.map((h) => h.stop()));
      },
    };
  };
  const one = await redisSide(1);
  const two = await redisSide(2);
  const sides: Array<Side<Rep>> = [
    { name: 'in-process host', run: () => measure([local], (i) => local.inference(i)) },
    { name: 'socket host', run: () => measure([socketHost], (i) => socketClient.inference(i)) },
    one.side,
    two.side,
  ];
  let results: Map<string, Rep[]>;
  try {
    results = await alternate(sides, { reps, warmup: 1, progress });
  } finally {
    progress.done();
    await one.close();
    await two.close();
    await socketClient.close();
    await server.close();
    await socketHost.stop();
    await local.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const med = (name: string, key: keyof Rep): number => median((results.get(name) ?? []).map((r) => r[key]));
  const base = med('in-process host', 'throughput');
  const rows = sides.map((s) => [
    s.name,
    fmt(med(s.name, 'throughput'), 0),
    fmt(med(s.name, 'p50'), 2),
    fmt(med(s.name, 'p99'), 2),
    fmt(med(s.name, 'meanBatch'), 1),
    fmt(ratio(med(s.name, 'throughput'), base), 2),
    String((results.get(s.name) ?? []).reduce((n, r) => n + r.failed, 0)),
  ]);
  report(
    `Scale-out through Redis (${CLIENTS} closed-loop callers, model 2 ms + 0.02 ms/row, max batch ${MAX_BATCH}, medians of ${reps} × ${durationMs / 1000} s)`,
    [{ text: table(['route', 'req/s', 'p50 ms', 'p99 ms', 'mean batch', '× in-process', 'errors'], rows) }],
  );
  writeResults('redis', args, {
    clients: CLIENTS,
    maxBatchSize: MAX_BATCH,
    durationMs,
    reps,
    sides: Object.fromEntries(sides.map((s) => [s.name, results.get(s.name)])),
  });
});
