/**
 * Scenario: how much of a model's full-batch capacity a Redis replica delivers. A model that
 * costs `a + b × rows` ms of wall-clock time per batch (a sleep: it stands for a model that runs
 * elsewhere and costs this CPU nothing), 256 closed-loop callers (8 full batches waiting), side by
 * side in one run: the model in this process (the reference: full batches back to back), one
 * Redis replica and two. Two models: 20 ms + 0.2 ms/row (a GPU-sized model) and 2 ms flat (a short
 * one, where the replica's own gaps weigh most). Then light load: one caller on the 2 ms model,
 * the median added by Redis over the Unix-socket host.
 *
 * The figures: each side's throughput as a share of the model's full-batch capacity
 * (maxBatchSize / the batch's cost), and of the in-process host's throughput.
 *
 *   npx ts-node bench/redis-capacity.ts --quick
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelHost } from '../src/engine/model-host';
import * as redisTransport from '../src/remote/redis';
import { connectHost, serveHost } from '../src/remote/socket';
import { redisUnavailable, startRedis } from '../test/support/redis-server';
import { measureRoute, type RedisRep } from './redis-measure';
import { alternate, fmt, main, median, pick, Progress, report, sleep, table, writeResults, type Side } from './harness';

const CALLERS = 256;
const MAX_BATCH = 32;

interface Cost {
  readonly name: string;
  readonly a: number;
  readonly b: number;
}
const COSTS: readonly Cost[] = [
  { name: '20 ms + 0.2 ms/row', a: 20, b: 0.2 },
  { name: '2 ms', a: 2, b: 0 },
];

type Rep = RedisRep;

function model(cost: Cost): ModelHost<number, number> {
  return new ModelHost(
    async (xs: readonly number[]) => {
      await sleep(cost.a + cost.b * xs.length);
      return xs.map((x) => x + 1);
    },
    { maxBatchSize: MAX_BATCH },
  );
}

/** Full-batch capacity in items/s. */
const capacityOf = (c: Cost): number => (MAX_BATCH * 1000) / (c.a + c.b * MAX_BATCH);

main(async (args) => {
  const why = redisUnavailable();
  if (why !== undefined) throw new Error(`the redis-capacity scenario needs redis-server: ${why}`);
  const reps = args.reps ?? pick(args, 3, 7);
  const durationMs = pick(args, 2_000, 4_000);
  const progress = new Progress('redis-capacity', args.progress);
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 'mb-bench-'));
  const closers: Array<() => Promise<void>> = [];
  let named = 0;

  const measure = (hosts: ReadonlyArray<ModelHost<number, number>>, callers: number, call: (i: number) => Promise<unknown>): Promise<Rep> => measureRoute(hosts, callers, durationMs, call);

  const redisSide = async (name: string, cost: Cost, replicas: number, callers: number): Promise<Side<Rep>> => {
    const stream = `cap${++named}`;
    const hosts = Array.from({ length: replicas }, () => model(cost));
    const served = await Promise.all(hosts.map((h, i) => redisTransport.serveHost(h, { url: redis.url, model: stream, consumer: `replica${i}`, blockMs: 100 })));
    const front = await redisTransport.connectHost<number, number>({ url: redis.url, model: stream });
    closers.push(async () => {
      await front.close();
      await Promise.all(served.map((s) => s.close()));
      await Promise.all(hosts.map((h) => h.stop()));
    });
    return { name, run: () => measure(hosts, callers, (i) => front.inference(i)) };
  };

  const sides: Array<Side<Rep>> = [];
  for (const cost of COSTS) {
    const local = model(cost);
    closers.push(() => local.stop());
    sides.push({ name: `${cost.name}: in-process`, run: () => measure([local], CALLERS, (i) => local.inference(i)) });
    sides.push(await redisSide(`${cost.name}: Redis, 1 replica`, cost, 1, CALLERS));
    sides.push(await redisSide(`${cost.name}: Redis, 2 replicas`, cost, 2, CALLERS));
  }
  const light = COSTS[1]!;
  const socketHost = model(light);
  const socketPath = join(dir, 'model.sock');
  const server = await serveHost(socketHost, { path: socketPath });
  const socketClient = await connectHost<number, number>(socketPath);
  closers.push(async () => {
    await socketClient.close();
    await server.close();
    await socketHost.stop();
  });
  sides.push({ name: 'light load: socket host', run: () => measure([socketHost], 1, (i) => socketClient.inference(i)) });
  sides.push(await redisSide('light load: Redis, 1 replica', light, 1, 1));

  let results: Map<string, Rep[]>;
  try {
    results = await alternate(sides, { reps, warmup: 1, progress });
  } finally {
    progress.done();
    for (const close of closers.reverse()) await close();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const med = (name: string, key: keyof Rep): number => median((results.get(name) ?? []).map((r) => r[key]));
  const rows: string[][] = [];
  const shares: Record<string, number> = {};
  for (const cost of COSTS) {
    const capacity = capacityOf(cost);
    const local = med(`${cost.name}: in-process`, 'throughput');
    const one = med(`${cost.name}: Redis, 1 replica`, 'throughput');
    for (const route of ['in-process', 'Redis, 1 replica', 'Redis, 2 replicas']) {
      const name = `${cost.name}: ${route}`;
      const t = med(name, 'throughput');
      const replicas = route === 'Redis, 2 replicas' ? 2 : 1;
      shares[name] = t / (capacity * replicas);
      rows.push([
        name,
        fmt(t, 0),
        `${fmt((100 * t) / (capacity * replicas), 1)}%`,
        fmt(t / (local * replicas), 3),
        route === 'Redis, 2 replicas' ? `${fmt(t / one, 2)}×` : '',
        fmt(med(name, 'p50'), 2),
        fmt(med(name, 'p99'), 2),
        fmt(med(name, 'meanBatch'), 1),
        String((results.get(name) ?? []).reduce((n, r) => n + r.failed, 0)),
      ]);
    }
  }
  const socketP50 = med('light load: socket host', 'p50');
  const redisP50 = med('light load: Redis, 1 replica', 'p50');
  report(`Redis replicas against the model's full-batch capacity (${CALLERS} closed-loop callers, max batch ${MAX_BATCH}, medians of ${reps} × ${durationMs / 1000} s)`, [
    { text: table(['model: route', 'req/s', 'of capacity (per replica)', '× in-process (per replica)', '2 / 1 replica', 'p50 ms', 'p99 ms', 'mean batch', 'errors'], rows) },
    { heading: 'Light load (1 caller, 2 ms model)', text: table(['route', 'p50 ms', 'p99 ms'], [['socket host', fmt(socketP50, 3), fmt(med('light load: socket host', 'p99'), 3)], ['Redis, 1 replica', fmt(redisP50, 3), fmt(med('light load: Redis, 1 replica', 'p99'), 3)], ['Redis − socket', fmt(redisP50 - socketP50, 3), '']]) },
  ]);
  writeResults('redis-capacity', args, {
    callers: CALLERS,
    maxBatchSize: MAX_BATCH,
    durationMs,
    reps,
    capacity: Object.fromEntries(COSTS.map((c) => [c.name, capacityOf(c)])),
    shares,
    lightAddedP50Ms: redisP50 - socketP50,
    sides: Object.fromEntries(sides.map((s) => [s.name, results.get(s.name)])),
  });
});
