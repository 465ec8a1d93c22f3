/**
 * A/B of two checkouts of this repository on one machine, alternating: for each round, each
 * scenario runs once in the "before" tree and once in this one (the order swaps every round, so
 * neither side always runs on a warmer or cooler machine), each in a process of its own. Used to
 * show that a change costs nothing (e.g. a refactor): the figures that matter for the engine's
 * per-request CPU (overhead), continuous batching (generation) and the scale-out (redis).
 *
 *   git worktree add /tmp/before <commit> && cp -al node_modules /tmp/before/node_modules
 *   npx ts-node --transpile-only bench/ab.ts --before /tmp/before --rounds 5 overhead generation redis
 *
 * Writes bench/results/ab.json and prints a table of medians and the after/before ratio.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fmt, machineInfo, median, RESULTS_DIR, table } from './harness';

/** One figure a scenario's results file yields, larger is better. */
interface Metric {
  readonly name: string;
  readonly read: (results: Record<string, unknown>) => number;
}

type Json = Record<string, unknown>;
const at = (o: unknown, ...path: Array<string | number>): unknown => path.reduce<unknown>((v, k) => (v as Json | undefined)?.[k as string], o);
const medianOf = (runs: unknown, field: string): number => median((runs as Json[]).map((r) => r[field] as number));

const METRICS: Record<string, readonly Metric[]> = {
  overhead: [
    { name: 'requests/s, defaults (own process)', read: (j) => at(j, 'ownProcess', 'microbatch', 'medianThroughput') as number },
    { name: 'requests/s, 16 batches in flight (own process)', read: (j) => at(j, 'ownProcess', 'microbatch (maxConcurrentBatches 16)', 'medianThroughput') as number },
  ],
  generation: [
    { name: 'GenerationHost tokens/s at 80% load', read: (j) => medianOf(at(j, 'loads', '0.8', 'iteration-level (GenerationHost)'), 'tokensPerSec') },
    { name: 'GenerationHost tokens/s at 150% load', read: (j) => medianOf(at(j, 'loads', '1.5', 'iteration-level (GenerationHost)'), 'tokensPerSec') },
  ],
  redis: [
    { name: 'in-process host req/s', read: (j) => medianOf(at(j, 'sides', 'in-process host'), 'throughput') },
    { name: 'socket host req/s', read: (j) => medianOf(at(j, 'sides', 'socket host'), 'throughput') },
    { name: 'Redis, 1 replica req/s', read: (j) => medianOf(at(j, 'sides', 'Redis, 1 replica'), 'throughput') },
    { name: 'Redis, 2 replicas req/s', read: (j) => medianOf(at(j, 'sides', 'Redis, 2 replicas'), 'throughput') },
  ],
  'redis-capacity': [
    { name: '20 ms model, 1 replica: % of capacity', read: (j) => 100 * (at(j, 'shares', '20 ms + 0.2 ms/row: Redis, 1 replica') as number) },
    { name: '20 ms model, 2 replicas: % of capacity', read: (j) => 100 * (at(j, 'shares', '20 ms + 0.2 ms/row: Redis, 2 replicas') as number) },
    { name: '2 ms model, 1 replica: % of capacity', read: (j) => 100 * (at(j, 'shares', '2 ms: Redis, 1 replica') as number) },
    { name: '2 ms model, 2 replicas: % of capacity', read: (j) => 100 * (at(j, 'shares', '2 ms: Redis, 2 replicas') as number) },
    { name: 'light load: 10 ms − added p50 (ms)', read: (j) => 10 - (at(j, 'lightAddedP50Ms') as number) },
  ],
};

const argv = process.argv.slice(2);
const value = (flag: string): string | undefined => {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
};
const beforeDir = value('--before');
const rounds = Number(value('--rounds') ?? '5');
const scenarios = argv.filter((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
if (beforeDir === undefined || !Number.isInteger(rounds) || rounds < 1 || scenarios.length === 0 || scenarios.some((s) => METRICS[s] === undefined)) {
  console.error(`usage: bench/ab.ts --before <checkout> [--rounds N] ${Object.keys(METRICS).join('|')}...`);
  process.exit(2);
}
const trees = { before: resolve(beforeDir), after: resolve(__dirname, '..') };

/** One run of `scenario` in `tree`; its metrics. */
function runOnce(tree: string, scenario: string): number[] {
  const r = spawnSync(process.execPath, ['-r', 'ts-node/register', join(tree, 'bench', `${scenario}.ts`), '--quick'], {
    cwd: tree,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
  });
  if (r.status !== 0) throw new Error(`${scenario} failed in ${tree} (exit ${String(r.status ?? r.signal)})`);
  const j = JSON.parse(readFileSync(join(tree, 'bench', 'results', `${scenario}.json`), 'utf8')) as Json;
  return (METRICS[scenario] as readonly Metric[]).map((m) => m.read(j));
}

const runs: Record<string, { before: number[][]; after: number[][] }> = {};
const m = machineInfo();
console.log(`A/B, ${rounds} rounds alternating: before ${trees.before}, after ${trees.after}; ${m.cpu}, ${m.cores} cores, Node ${m.node}`);
for (let round = 0; round < rounds; round++) {
  for (const s of scenarios) {
    const r = (runs[s] ??= { before: [], after: [] });
    const order: Array<'before' | 'after'> = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
    for (const side of order) {
      process.stderr.write(`round ${round + 1}/${rounds}: ${s} ${side}\n`);
      r[side].push(runOnce(trees[side], s));
    }
  }
}

const rows: string[][] = [];
const out: Json = { scenario: 'ab', date: new Date().toISOString(), machine: m, rounds, trees, results: {} };
for (const s of scenarios) {
  const r = runs[s] as { before: number[][]; after: number[][] };
  (METRICS[s] as readonly Metric[]).forEach((metric, k) => {
    const b = r.before.map((x) => x[k] as number);
    const a = r.after.map((x) => x[k] as number);
    // The paired ratio: each round's after over the same round's before, then the median.
    const paired = median(a.map((v, i) => v / (b[i] as number)));
    const digits = (v: number): number => (Math.abs(v) < 1000 ? 2 : 0);
    rows.push([s, metric.name, fmt(median(b), digits(median(b))), fmt(median(a), digits(median(a))), `${fmt(median(a) / median(b), 3)}×`, `${fmt(paired, 3)}×`]);
    (out.results as Json)[`${s}: ${metric.name}`] = { before: b, after: a, ratioOfMedians: median(a) / median(b), pairedRatio: paired };
  });
}
console.log(`\n${table(['scenario', 'figure (larger is better)', 'before (median)', 'after (median)', 'after / before', 'paired'], rows)}`);
writeFileSync(join(RESULTS_DIR, 'ab.json'), `${JSON.stringify(out, null, 2)}\n`);
