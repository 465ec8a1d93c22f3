/**
 * Scenario 6, memory: RSS and heap after 10k requests and again after 1M requests through the same
 * host, each read after a full GC (the scenario re-spawns itself with `--expose-gc`). Growth must
 * stay within a few MB. Also the bytes copied per request on a concat batch path (one copy in,
 * one slice out), computed from the tensor sizes.
 *
 *   npx ts-node bench/memory.ts --quick
 */
import { spawnSync } from 'node:child_process';
import { ModelHost } from '../src/engine/model-host';
import { closedLoop, fmt, gc, main, pick, Progress, report, table, tick, writeResults, type TargetResult } from './harness';
import { concatBatchFn, loadModels, type BenchModel } from './models';

const MB = 2 ** 20;

interface Snapshot {
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

async function snapshot(): Promise<Snapshot> {
  for (let i = 0; i < 3; i++) {
    gc();
    await tick();
  }
  const u = process.memoryUsage();
  return { rss: u.rss, heapUsed: u.heapUsed, external: u.external, arrayBuffers: u.arrayBuffers };
}

interface Case {
  readonly name: string;
  readonly clients: number;
  readonly total: number;
  host(): ModelHost<unknown, unknown>;
  item(i: number): unknown;
}

if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
  // Re-run this file with --expose-gc (and ts-node), passing the arguments through.
  const r = spawnSync(process.execPath, ['--expose-gc', '-r', 'ts-node/register', __filename, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
  });
  process.exitCode = r.status ?? 1;
} else {
  main(async (args) => {
    const progress = new Progress('memory', args.progress);
    const [mlp, cls] = await loadModels(['mlp', 'cls']);
    if (mlp === undefined || cls === undefined) throw new Error('models did not load');
    const FIRST = 10_000;
    const identity = async (xs: readonly unknown[]): Promise<readonly unknown[]> => xs;
    const cases: Case[] = [
      { name: 'identity', clients: 1024, total: 1_000_000, host: () => new ModelHost(identity, { maxBatchSize: 64 }), item: (i) => i },
      // The same again: RSS that rose once (allocator high-water mark) does not keep rising.
      { name: 'identity, again (new host)', clients: 1024, total: 1_000_000, host: () => new ModelHost(identity, { maxBatchSize: 64 }), item: (i) => i },
      {
        name: 'identity, timeoutMs 60000 (a timer per request)',
        clients: 1024,
        total: pick(args, 300_000, 1_000_000),
        host: () => new ModelHost(identity, { maxBatchSize: 64, timeoutMs: 60_000 }),
        item: (i) => i,
      },
      {
        name: `${mlp.name}, concat batch function`,
        clients: 256,
        total: pick(args, 200_000, 1_000_000),
        host: () => new ModelHost(concatBatchFn(mlp), { maxBatchSize: mlp.maxBatchSize }) as ModelHost<unknown, unknown>,
        item: (i) => mlp.items[i % mlp.items.length],
      },
    ];
    // Warm the process first (JIT, V8's young-generation sizing, malloc arenas) with a throwaway host,
    // so that the 10k reading is not taken before the runtime reached its working size: without it
    // RSS rises ~10 MB during the first 1M requests of a fresh process and then stays flat (heap flat).
    progress.update('warm-up', true);
    const warm = new ModelHost(identity, { maxBatchSize: 64 });
    for (let k = 0; k < 2; k++) await closedLoop({ clients: 1024, total: 1_000_000, call: (i) => warm.inference(i) });
    await warm.stop();
    const rows: string[][] = [];
    const targets: TargetResult[] = [];
    const data: Record<string, unknown> = {};
    for (const c of cases) {
      progress.update(`${c.name}: first ${FIRST}`, true);
      const host = c.host();
      await closedLoop({ clients: c.clients, total: FIRST, call: (i) => host.inference(c.item(i)) });
      const a = await snapshot();
      progress.update(`${c.name}: to ${c.total.toLocaleString('en-US')}`, true);
      await closedLoop({ clients: c.clients, total: c.total - FIRST, call: (i) => host.inference(c.item(i)) });
      const b = await snapshot();
      await host.stop();
      const d = (k: keyof Snapshot): number => (b[k] - a[k]) / MB;
      rows.push([
        c.name,
        c.total.toLocaleString('en-US'),
        fmt(a.rss / MB, 1),
        fmt(b.rss / MB, 1),
        fmt(d('rss'), 2),
        fmt(a.heapUsed / MB, 2),
        fmt(b.heapUsed / MB, 2),
        fmt(d('heapUsed'), 3),
        fmt(d('external'), 3),
      ]);
      targets.push({ name: `memory ${c.name}: heapUsed growth (MB)`, value: d('heapUsed'), target: '≤ 1 MB', pass: d('heapUsed') <= 1 });
      targets.push({ name: `memory ${c.name}: RSS growth (MB)`, value: d('rss'), target: '≤ 5 MB', pass: d('rss') <= 5 });
      data[c.name] = { requests: c.total, after10k: a, afterAll: b };
    }
    progress.done();

    const copyRow = (m: BenchModel): string[] => {
      const inB = m.itemSize * 4;
      const outB = m.outSize * 4;
      return [m.name, `[${m.itemShape.join(',')}]`, fmt(inB, 0), fmt(outB, 0), fmt(inB + outB, 0), fmt(m.maxBatchSize * inB, 0)];
    };
    report(
      'Memory: after 10k requests vs after all requests, same host, after GC (MB)',
      [
        { text: table(['case', 'requests', 'RSS @10k', 'RSS @end', 'RSS Δ', 'heap @10k', 'heap @end', 'heap Δ', 'external Δ'], rows) },
        {
          heading: 'Bytes copied per request by a concat batch path (one copy in, one slice out)',
          text: table(['model', 'item shape', 'copied in', 'sliced out', 'total / request', 'batch input buffer'], [copyRow(mlp), copyRow(cls)]),
        },
      ],
      targets,
    );
    writeResults(
      'memory',
      args,
      {
        cases: data,
        bytesCopiedPerRequest: Object.fromEntries([mlp, cls].map((m) => [m.name, { in: m.itemSize * 4, out: m.outSize * 4 }])),
      },
      targets,
    );
  });
}
