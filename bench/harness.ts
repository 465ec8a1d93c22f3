/**
 * Shared benchmark harness: argument parsing, statistics, alternating side-by-side repetitions, a
 * progress line, printed tables and JSON results in `bench/results/<scenario>.json`.
 *
 * Method (after Triton's perf_analyzer): every comparison runs in the same process (the overhead
 * scenario also runs each side in a process of its own: see bench/overhead.ts), the sides
 * alternating A, B, A, B... so that noise from the (shared, 2-core) machine shifts every side the
 * same way; each side's figure is the median of its repetitions, and ratios are taken between
 * those medians.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export type Mode = 'quick' | 'full';

export interface BenchArgs {
  /** `quick` (the default): each scenario in well under a minute. `full`: the documented run. */
  readonly mode: Mode;
  /** Repetitions override (`--reps N`). */
  readonly reps: number | undefined;
  /** Suppress the progress line (`--no-progress`). */
  readonly progress: boolean;
}

/** Parses `--quick`, `--full`, `--reps N`, `--no-progress`; anything else is an error. */
export function parseArgs(argv: readonly string[] = process.argv.slice(2)): BenchArgs {
  let mode: Mode = 'quick';
  let reps: number | undefined;
  let progress = true;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') mode = 'quick';
    else if (a === '--full') mode = 'full';
    else if (a === '--no-progress') progress = false;
    else if (a === '--reps') {
      reps = Number(argv[++i]);
      if (!Number.isInteger(reps) || reps < 1) throw new RangeError(`--reps expects a positive integer, got ${String(argv[i])}`);
    } else throw new TypeError(`unknown argument ${String(a)}; expected --quick, --full, --reps N, --no-progress`);
  }
  return { mode, reps, progress };
}

/** `quick` or `full` value, whichever the mode asks for. */
export function pick<T>(args: BenchArgs, quick: T, full: T): T {
  return args.mode === 'full' ? full : quick;
}

// ---- statistics --------------------------------------------------------------------------------

/** Percentile `p` (0..100) of ascending-sorted values, linear interpolation; NaN when empty. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const rank = (p / 100) * (n - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(n - 1, lo + 1);
  const f = rank - lo;
  return (sorted[lo] as number) * (1 - f) + (sorted[hi] as number) * f;
}

/** Sorts a copy (numerically) and returns percentile `p`. */
export function percentile(values: ArrayLike<number>, p: number): number {
  return percentileSorted(Float64Array.from(values).sort(), p);
}

export function median(values: ArrayLike<number>): number {
  return percentile(values, 50);
}

export function mean(values: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i] as number;
  return values.length === 0 ? NaN : s / values.length;
}

export interface LatencySummary {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Mean and p50/p90/p99/max of a set of latencies (ms). */
export function summarize(values: ArrayLike<number>): LatencySummary {
  const s = Float64Array.from(values).sort();
  return {
    count: s.length,
    mean: mean(s),
    p50: percentileSorted(s, 50),
    p90: percentileSorted(s, 90),
    p99: percentileSorted(s, 99),
    max: s.length === 0 ? NaN : (s[s.length - 1] as number),
  };
}

/** `a / b`, NaN-safe. */
export function ratio(a: number, b: number): number {
  return b === 0 ? NaN : a / b;
}

/** Growable float64 buffer for latency samples (no per-sample allocation). */
export class Samples {
  #buf: Float64Array;
  #n = 0;
  constructor(capacity = 1024) {
    this.#buf = new Float64Array(capacity);
  }
  get length(): number {
    return this.#n;
  }
  push(v: number): void {
    if (this.#n === this.#buf.length) {
      const next = new Float64Array(this.#buf.length * 2);
      next.set(this.#buf);
      this.#buf = next;
    }
    this.#buf[this.#n++] = v;
  }
  values(): Float64Array {
    return this.#buf.subarray(0, this.#n);
  }
}

// ---- running -----------------------------------------------------------------------------------

/** One side of a comparison: `run` performs one repetition and returns its measurements. */
export interface Side<R> {
  readonly name: string;
  run(rep: number): Promise<R>;
}

export interface AlternateOptions {
  /** Measured repetitions per side. */
  readonly reps: number;
  /** Unmeasured warm-up repetitions per side (run first, also alternating). */
  readonly warmup?: number;
  /** Progress line label; omit for none. */
  readonly progress?: Progress;
  /** Label prefix in the progress line. */
  readonly label?: string;
}

/**
 * Runs the sides alternating (A, B, C, A, B, C, ...), warm-up rounds first, and returns each
 * side's measured repetitions in order. The starting side rotates every round so that no side
 * always runs right after a particular other one.
 */
export async function alternate<R>(sides: ReadonlyArray<Side<R>>, o: AlternateOptions): Promise<Map<string, R[]>> {
  const out = new Map<string, R[]>(sides.map((s) => [s.name, []]));
  const warmup = o.warmup ?? 1;
  const rounds = warmup + o.reps;
  for (let round = 0; round < rounds; round++) {
    const measured = round >= warmup;
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(k + round) % sides.length] as Side<R>;
      o.progress?.update(`${o.label ?? ''}${measured ? `rep ${round - warmup + 1}/${o.reps}` : 'warm-up'} ${side.name}`);
      const r = await side.run(round - warmup);
      if (measured) (out.get(side.name) as R[]).push(r);
    }
  }
  return out;
}

/** Resolves on the next turn of the event loop (lets pending I/O and timers run). */
export function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export const now = (): number => performance.now();

/** Runs the garbage collector if the process was started with `--expose-gc`. */
export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

// ---- progress ----------------------------------------------------------------------------------

/** A single status line on stderr, rewritten in place (`\r`) at most ~10 times a second. */
export class Progress {
  readonly #enabled: boolean;
  readonly #started = now();
  #last = 0;
  #width = 0;
  constructor(readonly scenario: string, enabled = true) {
    this.#enabled = enabled && process.stderr.isTTY === true;
  }
  update(text: string, force = false): void {
    if (!this.#enabled) return;
    const t = now();
    if (!force && t - this.#last < 100) return;
    this.#last = t;
    const line = `[${this.scenario} ${((t - this.#started) / 1000).toFixed(1)}s] ${text}`;
    const pad = Math.max(0, this.#width - line.length);
    this.#width = line.length;
    process.stderr.write(`\r${line}${' '.repeat(pad)}`);
  }
  done(): void {
    if (!this.#enabled || this.#width === 0) return;
    process.stderr.write(`\r${' '.repeat(this.#width)}\r`);
    this.#width = 0;
  }
}

// ---- output ------------------------------------------------------------------------------------

export type Cell = string | number;

/** Formats a number with `digits` significant-ish decimals; integers ≥ 1000 get thousands separators. */
export function fmt(v: number, digits = 2): string {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? '–' : String(v);
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return v.toFixed(digits);
}

/** Renders a table as GitHub markdown (also readable in a terminal). */
export function table(columns: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  return [line(columns), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

/** A target from issue 7 and whether this run met it. */
export interface TargetResult {
  readonly name: string;
  readonly value: number;
  readonly target: string;
  readonly pass: boolean;
}

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly onnxruntime: string | undefined;
  readonly loadavgAtStart: readonly number[];
}

/** CPU model (from /proc/cpuinfo where available), core count, Node and onnxruntime versions. */
export function machineInfo(): MachineInfo {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1] !== undefined) cpu = m[1].trim();
  } catch {
    // not Linux: keep os.cpus()
  }
  let onnxruntime: string | undefined;
  try {
    onnxruntime = (JSON.parse(readFileSync(require.resolve('onnxruntime-node/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    onnxruntime = undefined;
  }
  return { cpu, cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, onnxruntime, loadavgAtStart: loadavg() };
}

const LOAD_AT_START = loadavg();

/** Where results go: `bench/results/`. */
export const RESULTS_DIR = join(__dirname, 'results');

/** Writes `bench/results/<scenario>.json` and returns its path. */
export function writeResults(scenario: string, args: BenchArgs, data: Record<string, unknown>, targets: readonly TargetResult[] = []): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${scenario}.json`);
  const body = {
    scenario,
    mode: args.mode,
    date: new Date().toISOString(),
    machine: { ...machineInfo(), loadavgAtStart: LOAD_AT_START, loadavgAtEnd: loadavg() },
    targets,
    ...data,
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  return file;
}

/** Prints a scenario heading, its tables and its targets. */
export function report(title: string, sections: ReadonlyArray<{ readonly heading?: string; readonly text: string }>, targets: readonly TargetResult[] = []): void {
  const out: string[] = [`\n## ${title}\n`];
  for (const s of sections) {
    if (s.heading !== undefined) out.push(`### ${s.heading}\n`);
    out.push(s.text, '');
  }
  if (targets.length > 0) {
    out.push(
      table(
        ['target', 'measured', 'wanted', 'holds'],
        targets.map((t) => [t.name, fmt(t.value, 3), t.target, t.pass ? 'yes' : 'NO']),
      ),
      '',
    );
  }
  console.log(out.join('\n'));
}

/** The 1-minute load average, to show whether other work shared the machine. */
export function loadNote(): string {
  const l = loadavg()[0] as number;
  return `load average ${l.toFixed(2)} on ${cpus().length} cores`;
}

/** Runs `fn` as the scenario's main, printing errors and setting the exit code. */
export function main(fn: (args: BenchArgs) => Promise<void>): void {
  const args = parseArgs();
  fn(args).then(
    () => undefined,
    (e: unknown) => {
      console.error(e instanceof Error ? (e.stack ?? e.message) : e);
      process.exitCode = 1;
    },
  );
}

// ---- load generators ---------------------------------------------------------------------------

export interface ClosedLoopOptions {
  /** Concurrent callers, each sending its next request as soon as its last one is answered. */
  readonly clients: number;
  /** Stop issuing after this many requests in all (one of `total` / `durationMs` is required). */
  readonly total?: number;
  /** Stop issuing after this many milliseconds. */
  readonly durationMs?: number;
  /** Record each request's latency (costs two clock reads per request). */
  readonly latencies?: Samples;
  /** One request; `i` counts requests from 0. */
  call(i: number): Promise<unknown>;
}

export interface ClosedLoopResult {
  readonly completed: number;
  readonly failed: number;
  readonly elapsedMs: number;
  /** Completed requests per second, over the whole run including the drain. */
  readonly throughput: number;
}

/** Closed-loop load: `clients` callers in parallel, each awaiting its answer before the next call. */
export async function closedLoop(o: ClosedLoopOptions): Promise<ClosedLoopResult> {
  const total = o.total ?? Infinity;
  const start = now();
  const end = o.durationMs === undefined ? Infinity : start + o.durationMs;
  let issued = 0;
  let completed = 0;
  let failed = 0;
  const lat = o.latencies;
  // The clock is read once per 64 requests, not per request: a per-request read was 2% of the inline
  // MLP's profile, a cost the pre-formed side of a comparison does not pay.
  let over = false;
  const client = async (): Promise<void> => {
    while (issued < total && !over) {
      if (end !== Infinity && (issued & 63) === 0 && now() >= end) {
        over = true;
        return;
      }
      const i = issued++;
      if (lat === undefined) {
        try {
          await o.call(i);
          completed++;
        } catch {
          failed++;
        }
      } else {
        const t0 = now();
        try {
          await o.call(i);
          completed++;
          lat.push(now() - t0);
        } catch {
          failed++;
        }
      }
    }
  };
  const clients: Promise<void>[] = [];
  for (let c = 0; c < o.clients; c++) clients.push(client());
  await Promise.all(clients);
  const elapsedMs = now() - start;
  return { completed, failed, elapsedMs, throughput: (completed / elapsedMs) * 1000 };
}

/**
 * Exponential inter-arrival times (Poisson process) at `ratePerSec`, from a seeded generator so
 * that every setting sees the same arrival pattern.
 */
export function poissonSchedule(ratePerSec: number, durationMs: number, seed = 12345): Float64Array {
  let s = seed >>> 0 || 1;
  const rand = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const times = new Samples(Math.ceil((ratePerSec * durationMs) / 1000) + 16);
  let t = 0;
  const meanGap = 1000 / ratePerSec;
  for (;;) {
    t += -Math.log(rand()) * meanGap;
    if (t >= durationMs) break;
    times.push(t);
  }
  return times.values().slice();
}

export interface OpenLoopResult {
  readonly offered: number;
  readonly completed: number;
  readonly failed: number;
  /** Completed requests per second, from the first arrival to the last answer. */
  readonly throughput: number;
  /** Latency from each request's *scheduled* arrival time (no coordinated omission), ms. */
  readonly latency: LatencySummary;
  /** How late requests were issued behind their schedule (the JS thread was busy), ms. */
  readonly issueLag: LatencySummary;
  /** Every answered request's latency (ms, in order of answer), for pooling runs. */
  readonly latencies: Float64Array;
}

/**
 * Open-loop load: requests are issued at their scheduled times (`schedule`, ms from the start)
 * whatever the answers do. A blocked event loop (an inline model run) delays issuing; latency is
 * still counted from the scheduled time, as a client on another machine would see it.
 */
export function openLoop(schedule: Float64Array, call: (i: number) => Promise<unknown>): Promise<OpenLoopResult> {
  return new Promise((resolve) => {
    const n = schedule.length;
    const lat = new Samples(n);
    const lag = new Samples(n);
    let next = 0;
    let settled = 0;
    let failed = 0;
    let lastAnswer = 0;
    const start = now();
    const finish = (): void => {
      const elapsed = lastAnswer - start;
      resolve({
        offered: n,
        completed: lat.length,
        failed,
        throughput: (lat.length / elapsed) * 1000,
        latency: summarize(lat.values()),
        issueLag: summarize(lag.values()),
        latencies: lat.values().slice(),
      });
    };
    const issue = (i: number, t: number): void => {
      const scheduled = start + (schedule[i] as number);
      lag.push(t - scheduled);
      call(i).then(
        () => {
          lastAnswer = now();
          lat.push(lastAnswer - scheduled);
          if (++settled === n) finish();
        },
        () => {
          lastAnswer = now();
          failed++;
          if (++settled === n) finish();
        },
      );
    };
    const pump = (): void => {
      const t = now();
      while (next < n && start + (schedule[next] as number) <= t) issue(next++, t);
      if (next >= n) return;
      const wait = start + (schedule[next] as number) - now();
      // Timers are coarse (~1 ms): sleep when the next arrival is far, spin on setImmediate when near.
      if (wait > 1.5) setTimeout(pump, Math.floor(wait - 1));
      else setImmediate(pump);
    };
    if (n === 0) resolve({ offered: 0, completed: 0, failed: 0, throughput: 0, latency: summarize([]), issueLag: summarize([]), latencies: new Float64Array(0) });
    else pump();
  });
}
