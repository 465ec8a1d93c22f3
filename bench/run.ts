/**
 * Runs every benchmark scenario, each in its own process, then prints a summary of the targets.
 *
 *   npm run bench              # every scenario in --quick mode (each well under a minute)
 *   npm run bench -- --full    # the documented full run (several minutes)
 *   npm run bench -- --full overhead saturation   # only the scenarios named
 *
 * Scenarios run one after another (never in parallel: they would measure each other). Each writes
 * `bench/results/<scenario>.json`.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fmt, machineInfo, RESULTS_DIR, table, type TargetResult } from './harness';

export const SCENARIOS = ['overhead', 'light-load', 'saturation', 'event-loop', 'memory', 'open-loop', 'adaptive', 'lifecycle', 'generation', 'redis', 'redis-capacity', 'overload', 'overload-profile', 'spells', 'dashboard'] as const;

const argv = process.argv.slice(2);
const flags = argv.filter((a) => a.startsWith('--') || /^\d+$/.test(a));
const named = argv.filter((a) => !flags.includes(a));
for (const n of named) {
  if (!(SCENARIOS as readonly string[]).includes(n)) {
    console.error(`unknown scenario ${n}; known: ${SCENARIOS.join(', ')}`);
    process.exit(2);
  }
}
const chosen = named.length > 0 ? named : [...SCENARIOS];
const m = machineInfo();
console.log(
  `microbatch benchmarks (${flags.includes('--full') ? 'full' : 'quick'}): ${m.cpu}, ${m.cores} cores, Node ${m.node}, onnxruntime-node ${m.onnxruntime ?? '?'}, ` +
    `load average ${m.loadavgAtStart.map((l) => l.toFixed(2)).join(' ')}`,
);

const failed: string[] = [];
const started = Date.now();
for (const s of chosen) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['-r', 'ts-node/register', join(__dirname, `${s}.ts`), ...flags], {
    stdio: 'inherit',
    env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
  });
  if (r.status !== 0) failed.push(s);
  console.error(`(${s}: ${((Date.now() - t0) / 1000).toFixed(1)} s${r.status === 0 ? '' : `, exit ${String(r.status ?? r.signal)}`})`);
}

const rows: string[][] = [];
for (const s of chosen) {
  try {
    const j = JSON.parse(readFileSync(join(RESULTS_DIR, `${s}.json`), 'utf8')) as { targets?: TargetResult[] };
    for (const t of j.targets ?? []) rows.push([s, t.name, fmt(t.value, 3), t.target, t.pass ? 'yes' : 'NO']);
  } catch {
    rows.push([s, '(no results)', '–', '–', '–']);
  }
}
console.log(`\n## Targets (${((Date.now() - started) / 1000).toFixed(0)} s in all)\n`);
console.log(table(['scenario', 'target', 'measured', 'wanted', 'holds'], rows));
if (failed.length > 0) {
  console.error(`\nscenarios that failed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
