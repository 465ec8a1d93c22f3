/**
 * Why one batch at a time costs against DataLoader's order (issue 32, part 5: the overhead target).
 * One plain batcher (bench/serial-batcher.ts), an identity batch function, batches of 64, closed-
 * loop callers; the only difference between the two sides is how many batches run at once: one
 * (microbatch's default, `maxConcurrentBatches: 1`) or as many as the callers fill (16 for 1,024
 * callers: DataLoader starts every batch it forms at once). Every measurement is a fresh process
 * running the batcher compiled to JavaScript (bench/batch-order-child.ts), rounds alternating the
 * sides, the median reported. Three tables:
 *
 * 1. Callers in flight (256 to 2,048): one at a time ÷ DataLoader's order.
 * 2. V8's young generation (`--max-semi-space-size`), at 1,024 callers: both orders.
 * 3. `--full` with valgrind on the PATH: cachegrind's simulated caches, this machine's L1d and a
 *    last level of 512 KiB, 1 MiB and 2 MiB, read misses of data per request at the last level
 *    (a run of 3 repetitions less a run of 1, so that start-up and warm-up cancel).
 *
 * What it shows on a VM with 1 MiB of L2 per core (docs/performance.md, section 1): a request's
 * promise is settled about 420 KB of allocation after it was made when one batch runs at a time,
 * about 260 KB in DataLoader's order, which answers every batch before any caller asks again; at 1
 * MiB the first spills to L3 and the second does not.
 *
 *   npx ts-node --transpile-only bench/batch-order.ts --quick
 *   npx ts-node --transpile-only bench/batch-order.ts --full   # more rounds, and cachegrind (valgrind, ~10 min)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { fmt, main, median, pick, Progress, report, table, writeResults, type TargetResult } from './harness';

const BATCH = 64;
const CALLERS = [256, 512, 1024, 2048] as const;
const SEMI_SPACES = [2, 4, 8, 16, 32] as const;
/** Last-level sizes cachegrind simulates, in KiB (this VM's L2 is 1 MiB per core). */
const LAST_LEVELS = [512, 1024, 2048] as const;
/** This VM's L1d per core (48 KiB, 12-way). */
const L1D = '49152,12,64';
const CACHEGRIND_REQUESTS = 300_000;

/** Compiles the child, the harness and the batcher into a temporary folder; returns the child's path. */
function compileChild(dir: string): string {
  for (const name of ['batch-order-child', 'harness', 'serial-batcher']) {
    const source = readFileSync(join(__dirname, `${name}.ts`), 'utf8');
    const out = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
    writeFileSync(join(dir, `${name}.js`), out.outputText);
  }
  return join(dir, 'batch-order-child.js');
}

/** Runs `command args` and returns its stdout and stderr, or throws with them. */
function run(command: string, args: readonly string[]): { stdout: string; stderr: string } {
  const r = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${String(r.status ?? r.signal)}): ${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr };
}

/** One process: requests/s, median of `reps` after a warm-up. */
function throughput(child: string, inFlight: number, callers: number, flags: readonly string[] = []): number {
  const { stdout } = run(process.execPath, [...flags, child, String(inFlight), String(callers), '1000000', '3']);
  return (JSON.parse(stdout.trim()) as { throughput: number }).throughput;
}

/** Read misses of data at the last level, from cachegrind's summary. */
function lastLevelReadMisses(stderr: string): number {
  const m = /LLd misses:\s+([\d,]+)\s+\(\s*([\d,]+) rd/.exec(stderr);
  if (m === null) throw new Error(`no "LLd misses" line in cachegrind's output:\n${stderr.slice(-2000)}`);
  return Number((m[2] as string).replace(/,/g, ''));
}

/** Last-level read misses per request in the steady state: 3 repetitions less 1, over 2 repetitions' requests. */
function missesPerRequest(child: string, inFlight: number, lastLevelKiB: number): number {
  const misses = (reps: number): number =>
    lastLevelReadMisses(
      run('valgrind', ['--tool=cachegrind', '--cache-sim=yes', `--D1=${L1D}`, `--LL=${lastLevelKiB * 1024},16,64`, '--cachegrind-out-file=/dev/null', process.execPath, '--max-semi-space-size=16', child, String(inFlight), '1024', String(CACHEGRIND_REQUESTS), String(reps)]).stderr,
    );
  return (misses(3) - misses(1)) / (2 * CACHEGRIND_REQUESTS);
}

function hasValgrind(): boolean {
  return spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).status === 0;
}

main(async (args) => {
  const rounds = args.reps ?? pick(args, 3, 7);
  const progress = new Progress('batch-order', args.progress);
  const dir = mkdtempSync(join(tmpdir(), 'microbatch-batch-order-'));
  try {
    const child = compileChild(dir);
    // Both sides of a cell in each round, the order alternating.
    const pair = (label: string, one: () => number, all: () => number): { one: number; all: number } => {
      const ones: number[] = [];
      const alls: number[] = [];
      for (let r = 0; r < rounds; r++) {
        progress.update(`${label}, round ${r + 1}/${rounds}`);
        if (r % 2 === 0) {
          ones.push(one());
          alls.push(all());
        } else {
          alls.push(all());
          ones.push(one());
        }
      }
      return { one: median(ones), all: median(alls) };
    };

    const byCallers = CALLERS.map((callers) => ({ callers, ...pair(`${callers} callers`, () => throughput(child, 1, callers), () => throughput(child, callers / BATCH, callers)) }));
    const heaps: Array<{ label: string; flags: string[] }> = [{ label: "Node's default", flags: [] }, ...SEMI_SPACES.map((mb) => ({ label: `${mb} MB`, flags: [`--max-semi-space-size=${mb}`] }))];
    const byHeap = heaps.map((h) => ({ label: h.label, ...pair(`semi-space ${h.label}`, () => throughput(child, 1, 1024, h.flags), () => throughput(child, 16, 1024, h.flags)) }));

    const cachegrind = args.mode === 'full' && hasValgrind();
    const byCache = cachegrind
      ? LAST_LEVELS.map((kib) => {
          progress.update(`cachegrind, last level ${kib} KiB`);
          return { kib, one: missesPerRequest(child, 1, kib), all: missesPerRequest(child, 16, kib) };
        })
      : [];
    progress.done();

    const mps = (x: number): string => fmt(x / 1e6, 2);
    const sections = [
      {
        heading: `Callers in flight (M requests/s, median of ${rounds} processes each; batches of ${BATCH})`,
        text: table(
          ['callers', 'one batch at a time', "DataLoader's order (all at once)", 'one at a time ÷ all at once'],
          byCallers.map((c) => [String(c.callers), mps(c.one), mps(c.all), `${fmt(c.one / c.all, 3)}×`]),
        ),
      },
      {
        heading: `V8's young generation at 1,024 callers (--max-semi-space-size; M requests/s, median of ${rounds})`,
        text: table(
          ['semi-space', 'one batch at a time', "DataLoader's order (16 at once)", 'one at a time ÷ all at once'],
          byHeap.map((h) => [h.label, mps(h.one), mps(h.all), `${fmt(h.one / h.all, 3)}×`]),
        ),
      },
      {
        heading: 'Simulated caches (cachegrind), 1,024 callers: last-level read misses of data per request',
        text: cachegrind
          ? table(
              ['last level', 'one batch at a time', "DataLoader's order (16 at once)", 'ratio'],
              byCache.map((c) => [`${c.kib} KiB`, fmt(c.one, 2), fmt(c.all, 2), `${fmt(c.one / c.all, 2)}×`]),
            )
          : args.mode === 'full'
            ? 'valgrind is not on the PATH: skipped.'
            : 'Run with --full (and valgrind on the PATH) for this table.',
      },
    ];
    const at1024 = byCallers.find((c) => c.callers === 1024);
    const targets: TargetResult[] = at1024 === undefined ? [] : [{ name: 'one batch at a time ÷ all at once, 1,024 callers, default heap (report)', value: at1024.one / at1024.all, target: 'report', pass: true }];
    report('Batch order: one batch at a time against DataLoader\'s order, one plain batcher, identity batch function', sections, targets);
    writeResults('batch-order', args, { batch: BATCH, rounds, byCallers, byHeap, byCache }, targets);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
