import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type * as Ort from 'onnxruntime-node';
import type { ModelDescription } from '../onnx';
import { DTYPES, isTensorType } from '../tensor/dtypes';
import { numberFlag, onePositional, parse, UsageError, type Options } from './args';
import { predictionTable, recommend, type BatchTiming } from './recommend';
import type { Io } from './io';

/** The defaults of `bench`'s flags, which the help states and the parsing applies. @internal */
export const BENCH_DEFAULTS = {
  'max-batch-size': 64,
  seconds: 10,
  loads: '30,70,95',
} as const;

/** `microbatch bench --help`. */
export const BENCH_HELP = `Usage: microbatch bench <model.onnx> [options]

Measures the model's latency per batch size (1, 2, 4, ... up to --max-batch-size): a warm-up run,
then repeated runs whose median is reported, with the cost per item. Recommends maxBatchSize (where
the cost per item stops improving meaningfully), then plays the measured run times through the
real host on a simulated clock at each of --loads, for maxDelayMs 0, a quarter, half, one and two
runs of a full batch and the adaptive policy; prints each one's predicted p50/p99 and recommends
the one never far from the best p99 at any load (ties go to the simplest).
Inputs are synthetic (random floats, zero integers); the model runs on this thread, unbatched by
microbatch, so the numbers are the model's own.

Options:
  --max-batch-size N    largest batch size to try                        (default ${BENCH_DEFAULTS['max-batch-size']})
  --seconds S           time budget for all the measurements             (default ${BENCH_DEFAULTS.seconds})
  --threads N           onnxruntime intra-op threads                     (default: all cores)
  --dim NAME=SIZE       size of a symbolic non-batch dimension; repeat;
                        required for each one (bench refuses to guess)
  --loads P,P,...       loads to predict at, in % of the full-batch throughput (default ${BENCH_DEFAULTS.loads})
  --max-latency-ms MS   latency budget: the adaptive policy's target; answers
                        past it are counted as late in the predictions  (default: none)
  -h, --help            show this help

Example:
  microbatch bench model.onnx --max-batch-size 32 --seconds 5
`;

const OPTIONS: Options = {
  'max-batch-size': { type: 'string' },
  seconds: { type: 'string' },
  threads: { type: 'string' },
  dim: { type: 'string', multiple: true },
  loads: { type: 'string' },
  'max-latency-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

function parseDims(cmd: string, raw: unknown): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of (raw as string[] | undefined) ?? []) {
    const m = /^([^=]+)=(\d+)$/.exec(item);
    if (m === null || Number(m[2]) < 1) throw new UsageError(`${cmd}: --dim must look like NAME=SIZE with SIZE >= 1, got ${JSON.stringify(item)}`);
    out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

/** `--loads 30,70,95` as fractions, or a {@link UsageError} naming what came. */
export function parseLoads(cmd: string, raw: unknown): number[] {
  const parts = String(raw).split(',').map((p) => p.trim());
  const loads = parts.map(Number);
  if (parts.length === 0 || loads.some((l) => !(l > 0 && l <= 200))) {
    throw new UsageError(`${cmd}: --loads must be percentages of the full-batch throughput between 0 and 200, separated by commas (e.g. 30,70,95), got ${JSON.stringify(raw)}`);
  }
  return loads.map((l) => l / 100);
}

/**
 * Refuses to measure a model whose symbolic non-batch dims have no size: timings at a made-up size
 * (1×1 for an image's height and width) say nothing about the real model.
 */
function checkDims(cmd: string, model: ModelDescription, dims: Map<string, number>): void {
  const unset = new Set<string>();
  for (const t of model.inputs) {
    t.dims.forEach((d, axis) => {
      if (axis !== t.batchAxis && typeof d === 'string' && !dims.has(d)) unset.add(d);
    });
  }
  if (unset.size === 0) return;
  const names = [...unset];
  throw new UsageError(
    `${cmd}: the model's inputs have symbolic dims ${names.join(', ')} that bench cannot guess (${describeInputs(model)}); ` +
      `give each a realistic size: ${names.map((n) => `--dim ${n}=SIZE`).join(' ')}`,
  );
}

function describeInputs(model: ModelDescription): string {
  return model.inputs.map((t) => `${t.name} [${t.dims.join(', ')}]`).join(', ');
}

/** Synthetic feeds for a batch of `rows`: pseudo-random floats in [-1, 1), zeros otherwise. */
function makeFeeds(ort: typeof Ort, model: ModelDescription, rows: number, dims: Map<string, number>): Record<string, Tensor> {
  const feeds: Record<string, Tensor> = {};
  let seed = 12345;
  for (const t of model.inputs) {
    if (!isTensorType(t.dtype)) throw new Error(`input "${t.name}" has type ${t.dtype}, which bench cannot synthesize`);
    const shape = t.dims.map((d, axis) => {
      if (axis === t.batchAxis) return rows;
      return typeof d === 'number' ? d : (dims.get(d) as number); // checkDims made sure
    });
    const size = shape.reduce((a, b) => a * b, 1);
    const data = DTYPES[t.dtype].make(size);
    if (t.dtype === 'float32' || t.dtype === 'float64') {
      const f = data as Float32Array;
      for (let i = 0; i < size; i++) {
        seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
        f[i] = seed / 2 ** 31 - 1;
      }
    }
    feeds[t.name] = new ort.Tensor(t.dtype as Tensor.Type, data as Tensor.DataType, shape);
  }
  return feeds;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Times one batch size: one warm-up run, then runs until its share of the budget is spent (3 to 200). */
async function timeBatch(session: InferenceSession, feeds: Record<string, Tensor>, budgetMs: number): Promise<{ runs: number; medianMs: number }> {
  await session.run(feeds);
  const times: number[] = [];
  const end = performance.now() + budgetMs;
  while (times.length < 3 || (performance.now() < end && times.length < 200)) {
    const t0 = performance.now();
    await session.run(feeds);
    times.push(performance.now() - t0);
  }
  return { runs: times.length, medianMs: median(times) };
}

/** Runs `microbatch bench`. @internal */
export async function bench(argv: readonly string[], io: Io): Promise<number> {
  const cmd = 'microbatch bench';
  const { values, positionals } = parse(cmd, argv, OPTIONS);
  if (values.help === true) {
    io.out(BENCH_HELP);
    return 0;
  }
  const modelPath = onePositional(cmd, positionals, 'model path (an .onnx file)');
  const maxBatch = numberFlag(cmd, values, 'max-batch-size', { min: 1, max: 65536, integer: true }) ?? BENCH_DEFAULTS['max-batch-size'];
  const seconds = numberFlag(cmd, values, 'seconds', { min: 0.1, max: 3600 }) ?? BENCH_DEFAULTS.seconds;
  const threads = numberFlag(cmd, values, 'threads', { min: 1, max: 1024, integer: true });
  const dims = parseDims(cmd, values.dim);
  const loads = parseLoads(cmd, values.loads ?? BENCH_DEFAULTS.loads);
  const maxLatencyMs = numberFlag(cmd, values, 'max-latency-ms', { min: 0.001 });
  if (!existsSync(modelPath)) throw new UsageError(`${cmd}: no such model file: ${modelPath}`);

  // Loaded only now, so that --help and usage errors answer without loading onnxruntime.
  const [{ loadSession }, { describeModel }, { loadOrt }] = await Promise.all([import('../onnx/load-session'), import('../onnx/describe-model'), import('../onnx/runtime')]);
  const session = await loadSession(modelPath, threads === undefined ? {} : { intraOpNumThreads: threads });
  try {
    const model = describeModel(session);
    checkDims(cmd, model, dims);
    const sizes: number[] = [];
    if (model.unbatchable !== undefined) {
      io.err(`microbatch bench: the model cannot take batches (${model.unbatchable.message}); timing batch size 1 only`);
      sizes.push(1);
    } else {
      for (let b = 1; b < maxBatch; b *= 2) sizes.push(b);
      sizes.push(maxBatch);
    }
    const budget = (seconds * 1000) / sizes.length;
    io.err(`microbatch bench: ${modelPath}, batch sizes ${sizes.join(', ')}, ${seconds} s, ${threads ?? `${availableParallelism()} (all)`} threads`);
    const timings: BatchTiming[] = [];
    for (const [i, b] of sizes.entries()) {
      const line = `  batch ${String(b).padStart(5)}  [${i + 1}/${sizes.length}]`;
      if (io.tty) io.status(`${line} measuring...`);
      const { runs, medianMs } = await timeBatch(session, makeFeeds(loadOrt(), model, b, dims), budget);
      timings.push({ batchSize: b, runs, medianMs });
      if (!io.tty) io.err(`${line} ${medianMs.toFixed(3)} ms (${runs} runs)`);
    }
    if (io.tty) io.status('');

    const base = timings[0] as BatchTiming;
    const rows = timings.map((t) => {
      const perItem = t.medianMs / t.batchSize;
      return [String(t.batchSize), String(t.runs), t.medianMs.toFixed(3), perItem.toFixed(4), (1000 / perItem).toFixed(0), `${(base.medianMs / perItem).toFixed(2)}x`];
    });
    const head = ['batch', 'runs', 'median ms', 'ms/item', 'items/s', 'vs batch 1'];
    const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] as string).length)));
    const fmt = (r: readonly string[]): string => r.map((cell, c) => cell.padStart(widths[c] as number)).join('  ');
    io.out(`${fmt(head)}\n${rows.map(fmt).join('\n')}\n\n`);
    if (io.tty) io.status('  predicting latency per setting...');
    const rec = await recommend(timings, { loads, ...(maxLatencyMs === undefined ? {} : { maxLatencyMs }) });
    if (io.tty) io.status('');
    io.out(`predicted latency (simulated host, measured run times, Poisson arrivals):\n${predictionTable(rec)}\n`);
    const setting = rec.policy === 'adaptive' ? `policy 'adaptive'${maxLatencyMs === undefined ? '' : `, maxLatencyMs ${maxLatencyMs}`}` : `maxDelayMs ${rec.maxDelayMs}`;
    io.out(`recommended: maxBatchSize ${rec.maxBatchSize}, ${setting}\n  ${rec.why.join('\n  ')}\n`);
    return 0;
  } finally {
    await session.release();
  }
}
