/**
 * Scenario: generation, side by side in one run on the same decoder and the same arrivals.
 *
 * The model is a generated recurrent decoder (vocabulary 8192, hidden 768: a step costs ~1.5 ms
 * for one sequence and ~0.22 ms per sequence in a step of 16 on the 2-core box, the weight-bound
 * shape of LLM decoding). Callers arrive open-loop (Poisson), each with a prompt of 1–8 tokens and
 * an output length drawn uniformly from 4–128 tokens (seeded, the same for every side):
 *
 * 1. one sequence at a time (a `GenerationHost` with one slot);
 * 2. request-level batching, the seed's method: when the model is free, the waiting requests (up
 *    to 16) form a batch that is decoded step by step until its longest sequence ends; finished
 *    sequences keep their rows, and a new request waits for the whole batch (tokens are still
 *    streamed as produced, which flatters this side's time to first token);
 * 3. iteration-level batching: a `GenerationHost` with 16 slots (new prompts join at the next step,
 *    finished sequences leave at once).
 *
 * Reports tokens/s (tokens delivered ÷ time from the first arrival to the last token), time to
 * first token (from the scheduled arrival) p50/p99, and per-token latency (a sequence's time after
 * its first token ÷ its later tokens) p50/p99. Target: iteration-level ≥ 1.5× request-level
 * tokens/s with a time-to-first-token p99 no worse.
 *
 *   npx ts-node bench/generation.ts --quick
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { GenerationHost, greedy } from '../src/generate/generation-host';
import { DecoderBatcher, type DecoderState } from '../src/generate/decoder-batcher';
import type { StepInput } from '../src/generate/options';
import { recurrentDecoderModel } from '../examples/support/decoder-models';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alternate, fmt, machineInfo, main, median, pick, poissonSchedule, Progress, ratio, report, RESULTS_DIR, summarize, table, writeResults, type Side, type TargetResult } from './harness';
import { lineChart, type Series } from './svg';

const VOCAB = 8192;
const HIDDEN = 768;
const SLOTS = 16;

interface Caller {
  readonly prompt: number[];
  readonly maxTokens: number;
}

interface Rep {
  readonly tokensPerSec: number;
  readonly ttftP50: number;
  readonly ttftP99: number;
  readonly perTokenP50: number;
  readonly perTokenP99: number;
  readonly makespanMs: number;
  readonly meanStepRows: number;
}

type State = DecoderState<Tensor>;
type Feeds = Record<string, Tensor>;

const tensor = (type: string, data: unknown, dims: readonly number[]): Tensor => new Tensor(type as Tensor.Type, data as Tensor.DataType, dims);

/** Seeded callers: prompts of 1–8 tokens, outputs of 4–128 tokens. */
function makeCallers(n: number, seed: number): Caller[] {
  let s = seed >>> 0 || 1;
  const rand = (k: number): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % k;
  };
  return Array.from({ length: n }, () => ({ prompt: Array.from({ length: 1 + rand(8) }, () => rand(VOCAB)), maxTokens: 4 + rand(125) }));
}

/**
 * Drives the arrivals: caller i starts at `schedule[i]` ms; `serve(i, onToken)` resolves when its
 * sequence ends. Returns what each caller saw, timed from its scheduled arrival.
 */
async function drive(schedule: Float64Array, serve: (i: number, onToken: () => void) => Promise<void>): Promise<{ ttft: number[]; perToken: number[]; tokens: number; makespanMs: number }> {
  const start = performance.now();
  const ttft: number[] = [];
  const perToken: number[] = [];
  let tokens = 0;
  let last = start;
  await Promise.all(
    Array.from(schedule, async (at, i) => {
      const wait = start + at - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const arrival = start + at;
      let first = NaN;
      let count = 0;
      await serve(i, () => {
        const t = performance.now();
        if (count === 0) first = t;
        count++;
        tokens++;
        last = Math.max(last, t);
      });
      ttft.push(first - arrival);
      if (count > 1) perToken.push((last - first) / (count - 1));
    }),
  );
  return { ttft, perToken, tokens, makespanMs: last - start };
}

main(async (args) => {
  const progress = new Progress('generation', args.progress);
  const reps = args.reps ?? pick(args, 1, 3);
  const requests = pick(args, 48, 160);
  const session = await InferenceSession.create(recurrentDecoderModel({ vocab: VOCAB, hidden: HIDDEN }), { intraOpNumThreads: 1 });
  const callers = makeCallers(requests, 7);
  const rowsPerCaller = callers.reduce((a, c) => a + c.prompt.length - 1 + c.maxTokens, 0) / callers.length;
  // Offered load as a share of what full 16-row steps can serve, measured now on this machine.
  const step16 = await timeStep(session, SLOTS);
  const capacity = ((SLOTS / step16) * 1000) / rowsPerCaller;
  const batcher = new DecoderBatcher<Tensor>({ token: 'token', logits: 'logits', state: { state: 'next_state' }, tensor });
  const initialState = (): State => ({ state: new Tensor('float32', new Float32Array(HIDDEN), [1, HIDDEN]) });
  const run = (feeds: Feeds): Promise<Readonly<Record<string, Tensor>>> => session.run(feeds);

  const hostSide = (name: string, slots: number, schedule: Float64Array): Side<Rep> => ({
    name,
    async run() {
      let rows = 0;
      let steps = 0;
      const host = new GenerationHost<State, Feeds, Readonly<Record<string, Tensor>>>(run, {
        maxBatchSize: slots,
        batcher,
        initialState,
        observer: { onStep: (e) => ((rows += e.sequences), steps++) },
      });
      const r = await drive(schedule, async (i, onToken) => {
        const c = callers[i] as Caller;
        for await (const _ of host.generate(c.prompt, { maxTokens: c.maxTokens })) onToken();
      });
      await host.stop();
      return summarizeRep(r, rows / steps);
    },
  });

  const requestLevel = (schedule: Float64Array): Side<Rep> => ({
    name: 'request-level batching',
    async run() {
      let rows = 0;
      let steps = 0;
      const waiting: Array<{ i: number; onToken: () => void; done: () => void }> = [];
      let busy = false;
      const loop = async (): Promise<void> => {
        busy = true;
        while (waiting.length > 0) {
          const batch = waiting.splice(0, SLOTS);
          const length = Math.max(...batch.map((b) => (callers[b.i] as Caller).prompt.length - 1 + (callers[b.i] as Caller).maxTokens));
          let states = batch.map(() => initialState());
          const lastToken = batch.map(() => 0);
          // Every member keeps its row until the longest ends: the seed's static batch.
          for (let p = 0; p < length; p++) {
            const inputs: Array<StepInput<State>> = batch.map((b, k) => {
              const c = callers[b.i] as Caller;
              return { token: p < c.prompt.length ? (c.prompt[p] as number) : (lastToken[k] as number), state: states[k] as State, position: p };
            });
            const merged = batcher.merge(inputs);
            const out = batcher.split(await run(merged.batch), merged.ctx);
            rows += batch.length;
            steps++;
            states = out.map((o) => (o as { state: State }).state);
            batch.forEach((b, k) => {
              const c = callers[b.i] as Caller;
              const produced = p + 1 - (c.prompt.length - 1);
              if (p + 1 < c.prompt.length || produced > c.maxTokens) return; // reading its prompt, or already finished
              lastToken[k] = greedy((out[k] as { logits: ArrayLike<number> }).logits);
              b.onToken();
              if (produced === c.maxTokens) b.done();
            });
            await new Promise((r) => setImmediate(r)); // arrivals come in between steps, as with the host
          }
        }
        busy = false;
      };
      const r = await drive(
        schedule,
        (i, onToken) =>
          new Promise<void>((done) => {
            waiting.push({ i, onToken, done });
            if (!busy) void loop();
          }),
      );
      return summarizeRep(r, rows / steps);
    },
  });

  const loads = [0.5, 0.8, 1.1, 1.5];
  const byLoad = new Map<number, Map<string, Rep[]>>();
  const names = ['one sequence at a time', 'request-level batching', 'iteration-level (GenerationHost)'];
  for (const load of loads) {
    const rate = load * capacity;
    const schedule = poissonSchedule(rate, (requests / rate) * 1000 * 1.5, 99).slice(0, requests);
    const sides = [hostSide(names[0] as string, 1, schedule), requestLevel(schedule), hostSide(names[2] as string, SLOTS, schedule)];
    byLoad.set(load, await alternate(sides, { reps, warmup: 0, progress, label: `${Math.round(load * 100)}% ` }));
  }
  progress.done();
  await session.release();

  const med = (load: number, name: string, key: keyof Rep): number => median((byLoad.get(load)?.get(name) ?? []).map((r) => r[key]));
  const sections: Array<{ heading?: string; text: string }> = loads.map((load) => ({
    heading: `Offered ${Math.round(load * 100)}% of ${SLOTS}-row capacity (${fmt(load * capacity, 1)} callers/s)`,
    text: table(
      ['side', 'tokens/s', 'TTFT p50 ms', 'TTFT p99 ms', 'ms/token p50', 'ms/token p99', 'rows/step', 'makespan s'],
      names.map((n) => [
        n,
        fmt(med(load, n, 'tokensPerSec'), 0),
        fmt(med(load, n, 'ttftP50'), 1),
        fmt(med(load, n, 'ttftP99'), 1),
        fmt(med(load, n, 'perTokenP50'), 2),
        fmt(med(load, n, 'perTokenP99'), 2),
        fmt(med(load, n, 'meanStepRows'), 1),
        fmt(med(load, n, 'makespanMs') / 1000, 2),
      ]),
    ),
  }));
  const iter = names[2] as string;
  const req = names[1] as string;
  const speedup = ratio(med(1.5, iter, 'tokensPerSec'), med(1.5, req, 'tokensPerSec'));
  const ttft80 = ratio(med(0.8, iter, 'ttftP99'), med(0.8, req, 'ttftP99'));
  const ttft150 = ratio(med(1.5, iter, 'ttftP99'), med(1.5, req, 'ttftP99'));
  const targets: TargetResult[] = [
    { name: 'generation: tokens/s under overload, iteration-level / request-level', value: speedup, target: '>= 1.5', pass: speedup >= 1.5 },
    { name: 'generation: TTFT p99 at 80% load, iteration-level / request-level', value: ttft80, target: '<= 1', pass: ttft80 <= 1 },
    { name: 'generation: TTFT p99 under overload, iteration-level / request-level', value: ttft150, target: '<= 1', pass: ttft150 <= 1 },
  ];
  // Two figures: tokens/s and time to first token against the offered load, one line per side.
  const colors = ['#888888', '#d62728', '#1f77b4'];
  const mi = machineInfo();
  const caption = [`Each point: median of ${reps} seeded repetition${reps > 1 ? 's' : ''}, sides alternating. ${mi.cpu}, ${mi.cores} cores, Node ${mi.node}.`];
  const x = { xLabel: `offered load (% of what ${SLOTS}-row steps serve)`, xMin: 40, xMax: 160, xTicks: [50, 80, 110, 150] };
  const line = (key: keyof Rep, dashed?: keyof Rep) => (n: string, i: number): Series[] => {
    const solid: Series = { name: n, color: colors[i] as string, points: loads.map((l) => [l * 100, med(l, n, key)] as const) };
    return dashed === undefined ? [solid] : [solid, { name: `${n}: p50`, color: colors[i] as string, dashed: true, legend: false, points: loads.map((l) => [l * 100, med(l, n, dashed)] as const) }];
  };
  const dir = args.mode === 'full' ? join(__dirname, '..', 'docs') : RESULTS_DIR;
  const figures = [
    { file: join(dir, 'generation-throughput.svg'), svg: lineChart(names.flatMap(line('tokensPerSec')), { title: 'Generation: tokens/s vs load', subtitle: `recurrent decoder V=${VOCAB} H=${HIDDEN}, ${requests} callers, outputs 4–128 tokens`, yLabel: 'tokens/s', yLog: false, caption, ...x }) },
    {
      file: join(dir, 'generation-ttft.svg'),
      svg: lineChart(names.flatMap(line('ttftP99', 'ttftP50')), { title: 'Generation: time to first token vs load', subtitle: `same runs; ${SLOTS} slots`, yLabel: 'time to first token (ms, log scale)', yLog: true, legendNotes: ['solid: p99', 'dashed: p50'], caption, ...x }),
    },
  ];
  for (const f of figures) writeFileSync(f.file, f.svg);
  sections.push({ heading: 'Figures', text: figures.map((f) => `plot: ${f.file}`).join('\n') });
  report(
    `Generation: recurrent decoder V=${VOCAB} H=${HIDDEN}, ${requests} callers (prompts 1–8, outputs 4–128 tokens), Poisson arrivals; a ${SLOTS}-row step ${fmt(step16, 2)} ms; median of ${reps}`,
    sections,
    targets,
  );
  writeResults('generation', args, { vocab: VOCAB, hidden: HIDDEN, slots: SLOTS, requests, capacity, step16Ms: step16, reps, loads: Object.fromEntries([...byLoad].map(([l, r]) => [l, Object.fromEntries(r)])) }, targets);
});

function summarizeRep(r: { ttft: number[]; perToken: number[]; tokens: number; makespanMs: number }, meanStepRows: number): Rep {
  const t = summarize(r.ttft);
  const p = summarize(r.perToken);
  return { tokensPerSec: (r.tokens / r.makespanMs) * 1000, ttftP50: t.p50, ttftP99: t.p99, perTokenP50: p.p50, perTokenP99: p.p99, makespanMs: r.makespanMs, meanStepRows };
}

/** Median time of a step of `rows` sequences, after a warm-up. */
async function timeStep(session: InferenceSession, rows: number): Promise<number> {
  const feeds = { token: new Tensor('int64', new BigInt64Array(rows), [rows]), state: new Tensor('float32', new Float32Array(rows * HIDDEN), [rows, HIDDEN]) };
  for (let i = 0; i < 10; i++) await session.run(feeds);
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    times.push(performance.now() - t0);
  }
  return median(times);
}
