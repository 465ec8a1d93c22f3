/**
 * gRPC beside HTTP binary tensors on the PaddleOCR direction classifier (`x [N,3,48,192]`): one
 * `microbatch serve --grpc-port` process (the CLI's defaults: one worker, its default threads,
 * batches of up to 32; built `dist/`, as a user runs it) serving both transports from one core,
 * each loaded in turn by a closed loop of 64 concurrent
 * requests from another process, against the model's own throughput on pre-formed batches of 32
 * with the same onnxruntime threads. The load generators: wrk for HTTP, and for gRPC h2load
 * (nghttp2's HTTP/2 load generator, C like wrk: Debian's nghttp2-client) sending the framed
 * `ModelInferRequest` on one channel, so that on a 2-core machine neither client takes the model's
 * core; then, as a client nobody here wrote, Python grpcio (bench/grpc-load.py), or grpc-js
 * (bench/grpc-load.ts) where Python has no grpc. h2load cannot read gRPC's status trailers, so its
 * failures are counted on the server (the model's Triton statistics). Each round runs the model
 * alone, then HTTP and gRPC (h2load) in an order that swaps every round, then the second client;
 * the targets are medians of each round's own ratios, so that a change in the machine's load
 * between rounds enters no ratio.
 *
 *   npx ts-node --transpile-only bench/grpc.ts [--quick | --full] [--reps N]
 *
 * `SERVE_ARGS='--heap-ballast-mb 0'` adds flags to the server. Writes bench/results/grpc.json and
 * prints a table.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as ort from 'onnxruntime-node';
import { INFERENCE_PROTO } from '../src/grpc';
import { loadSession } from '../src/onnx';
import { sharedMachineThreads } from '../src/executors/worker/thread-budget';
import { fmt, loadNote, main, median, now, percentile, pick, report, table, writeResults, type TargetResult } from './harness';
import { CLS_PATH } from './models';
import { cpuSeconds, startServe, stopServe } from './serve-process';
import { seeded } from '../test/support/onnx-models';
import { loadSync } from '@grpc/proto-loader';

const SHAPE = [3, 48, 192];
const BATCH = 32;
const CONCURRENCY = 64;

interface Load {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** CPU time the server's process (its worker and onnxruntime threads included) spent per answered request, in ms: the transports differ by what each costs, whatever its load generator costs. */
  readonly cpuMs: number;
}

/** Runs `load` and adds the server process's CPU time per request. */
async function measured(pid: number, load: () => Promise<Omit<Load, 'cpuMs'>>, seconds: number): Promise<Load> {
  const before = cpuSeconds(`/proc/${pid}/stat`);
  const r = await load();
  return { ...r, cpuMs: ((cpuSeconds(`/proc/${pid}/stat`) - before) * 1000) / (r.rps * seconds) };
}

const PYTHON = '/usr/bin/python3';

/** Generates Python stubs from the shipped .proto into `dir`; false where Python's grpc is missing. */
function pythonStubs(dir: string): boolean {
  try {
    execFileSync(PYTHON, ['-m', 'grpc_tools.protoc', `-I${dirname(INFERENCE_PROTO)}`, `--python_out=${dir}`, `--grpc_python_out=${dir}`, INFERENCE_PROTO], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Items per second of `session.run` on pre-formed batches of 32, one after another, for `seconds`. */
async function modelAlone(session: ort.InferenceSession, seconds: number): Promise<number> {
  const input = new ort.Tensor('float32', seeded(BATCH * SHAPE.reduce((a, b) => a * b, 1), 3), [BATCH, ...SHAPE]);
  const feeds = { [session.inputNames[0] as string]: input };
  await session.run(feeds);
  let items = 0;
  const start = now();
  while (now() - start < seconds * 1000) {
    await session.run(feeds);
    items += BATCH;
  }
  return items / ((now() - start) / 1000);
}

/** wrk's numbers from its --latency report (it prints latencies in us, ms or s). */
function parseWrk(text: string): Omit<Load, 'cpuMs'> {
  const ms = (v: string, unit: string): number => Number(v) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1);
  const lat = (p: string): number => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, 'm').exec(text);
    return m === null ? NaN : ms(m[1] as string, m[2] as string);
  };
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0) + Number(/Socket errors: .*timeout (\d+)/.exec(text)?.[1] ?? 0);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]), p50: lat('50'), p99: lat('99'), errors };
}

main(async (args) => {
  const seconds = pick(args, 6, 15);
  const reps = args.reps ?? pick(args, 2, 3);
  const threads = sharedMachineThreads(availableParallelism(), 1);
  const dir = mkdtempSync(join(tmpdir(), 'mb-bench-grpc-'));
  const session = await loadSession(CLS_PATH, { intraOpNumThreads: threads });
  const inputName = session.inputNames[0] as string;
  const { child, httpPort, grpcPort = 0 } = await startServe(join(__dirname, '..'), [CLS_PATH, '--port', '0', '--grpc-port', '0', '--name', 'cls', '--max-batch-size', String(BATCH), '--log-level', 'warn']);
  const pid = child.pid!;
  try {
    // One request: one item as raw little-endian FP32, asked back as binary.
    const item = Buffer.from(seeded(SHAPE.reduce((a, b) => a * b, 1), 5).buffer);
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: inputName, shape: [1, ...SHAPE], datatype: 'FP32', parameters: { binary_data_size: item.length } }], parameters: { binary_data_output: true } }));
    writeFileSync(join(dir, 'body.bin'), Buffer.concat([header, item]));
    writeFileSync(join(dir, 'item.bin'), item);
    writeFileSync(
      join(dir, 'post.lua'),
      `local f = io.open("${join(dir, 'body.bin')}", "rb")\nwrk.method = "POST"\nwrk.body = f:read("*all")\nf:close()\n` +
        `wrk.headers["Content-Type"] = "application/octet-stream"\nwrk.headers["Inference-Header-Content-Length"] = "${header.length}"\n`,
    );
    // Asynchronously: the server answers on this process's event loop while the load runs.
    const run = promisify(execFile);
    const runHttp = async (): Promise<Omit<Load, 'cpuMs'>> => {
      const r = await run('wrk', ['-t1', `-c${CONCURRENCY}`, `-d${seconds}s`, '--latency', '-s', join(dir, 'post.lua'), `http://127.0.0.1:${httpPort}/v2/models/cls/infer`], { encoding: 'utf8' });
      return parseWrk(r.stdout);
    };
    // Python's grpcio (gRPC's C core, what Triton's Python client runs on) loads the server for a
    // fraction of the CPU grpc-js needs, which on a small machine the model would otherwise lose;
    // grpc-js where Python's grpc is missing.
    const python = pythonStubs(dir);
    const runGrpc = async (): Promise<Omit<Load, 'cpuMs'>> => {
      const r = python
        ? await run(PYTHON, [join(__dirname, 'grpc-load.py'), dir, String(grpcPort), 'cls', inputName, [1, ...SHAPE].join(','), join(dir, 'item.bin'), String(CONCURRENCY), String(seconds)], { encoding: 'utf8' })
        : await run(process.execPath, ['-r', 'ts-node/register', join(__dirname, 'grpc-load.ts'), String(grpcPort), 'cls', inputName, [1, ...SHAPE].join(','), join(dir, 'item.bin'), String(CONCURRENCY), String(seconds)], {
            encoding: 'utf8',
            env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1' },
          });
      const j = JSON.parse(r.stdout) as { requests: number; errors: number; seconds: number; p50: number; p99: number };
      return { rps: j.requests / j.seconds, p50: j.p50, p99: j.p99, errors: j.errors };
    };
    // h2load: the call as gRPC frames it (a 5-byte prefix, then the message), on one connection
    // with CONCURRENCY streams; per-request times from its log file.
    const h2load = spawnSync('h2load', ['--version']).error === undefined;
    const method = (loadSync(INFERENCE_PROTO, { keepCase: true }) as Record<string, Record<string, { requestSerialize(v: unknown): Buffer }>>)['inference.GRPCInferenceService']!.ModelInfer!;
    const message = method.requestSerialize({ model_name: 'cls', inputs: [{ name: inputName, datatype: 'FP32', shape: [1, ...SHAPE] }], raw_input_contents: [item] });
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(message.length, 1);
    writeFileSync(join(dir, 'grpc-body.bin'), Buffer.concat([prefix, message]));
    const served = async (): Promise<{ ok: number }> => {
      const res = await fetch(`http://127.0.0.1:${httpPort}/v2/models/cls/stats`);
      const stats = ((await res.json()) as { model_stats: Array<{ inference_stats: { success: { count: number } } }> }).model_stats[0]!.inference_stats;
      return { ok: stats.success.count };
    };
    const runH2load = async (): Promise<Omit<Load, 'cpuMs'>> => {
      const log = join(dir, 'h2load.log');
      const before = await served();
      const r = await run('h2load', ['-t1', '-c1', `-m${CONCURRENCY}`, `-D${seconds}`, '-d', join(dir, 'grpc-body.bin'), '-H', 'content-type: application/grpc', '-H', 'te: trailers', `--log-file=${log}`, `http://127.0.0.1:${grpcPort}/inference.GRPCInferenceService/ModelInfer`], { encoding: 'utf8' });
      const after = await served();
      const times = readFileSync(log, 'utf8').trim().split('\n').map((line) => Number(line.split('\t')[2]) / 1000);
      const done = Number(/(\d+) succeeded/.exec(r.stdout)?.[1] ?? 0);
      // A gRPC failure is an HTTP 200 with a status trailer: count it where the model's statistics do.
      // (Calls still in flight when h2load stops are cancelled: the server counts those as failed, the client not at all.)
      const errors = Math.max(0, done - (after.ok - before.ok)) + Number(/(\d+) failed/.exec(r.stdout)?.[1] ?? 0);
      return { rps: done / seconds, p50: percentile(times, 50), p99: percentile(times, 99), errors };
    };
    await runHttp(); // warm both paths (the worker's session, the connections) before measuring
    const rounds: Array<{ model: number; http: Load; grpc: Load; client: Load; load: string }> = [];
    for (let i = 0; i < reps; i++) {
      const model = await modelAlone(session, seconds);
      // HTTP and gRPC swap places every round, so that neither always runs first after the model.
      const runFirst = i % 2 === 0 ? runHttp : h2load ? runH2load : runGrpc;
      const runSecond = i % 2 === 0 ? (h2load ? runH2load : runGrpc) : runHttp;
      const first = await measured(pid, runFirst, seconds);
      const second = await measured(pid, runSecond, seconds);
      const [h, g] = i % 2 === 0 ? [first, second] : [second, first];
      const c = h2load ? await measured(pid, runGrpc, seconds) : g;
      rounds.push({ model, http: h, grpc: g, client: c, load: loadNote() });
      console.error(`round ${i + 1}/${reps}: model ${fmt(model, 0)} items/s, HTTP ${fmt(h.rps, 0)} req/s, gRPC ${fmt(g.rps, 0)} req/s${h2load ? ` (h2load), ${fmt(c.rps, 0)} (${python ? 'grpcio' : 'grpc-js'})` : ''} (${loadNote()})`);
    }
    const model = median(rounds.map((r) => r.model));
    const side = (pickLoad: (r: (typeof rounds)[number]) => Load): Load => ({
      rps: median(rounds.map((r) => pickLoad(r).rps)),
      p50: median(rounds.map((r) => pickLoad(r).p50)),
      p99: median(rounds.map((r) => pickLoad(r).p99)),
      errors: rounds.reduce((n, r) => n + pickLoad(r).errors, 0),
      cpuMs: median(rounds.map((r) => pickLoad(r).cpuMs)),
    });
    const h = side((r) => r.http);
    const g = side((r) => r.grpc);
    const c = side((r) => r.client);
    const clientName = python ? 'Python grpcio' : 'grpc-js';
    const row = (name: string, l: Load): string[] => [name, fmt(l.rps, 0), fmt(l.rps / model, 2), fmt(l.p50, 1), fmt(l.p99, 1), fmt(l.cpuMs, 3), String(l.errors)];
    const rows = [
      ['model alone, batches of 32', fmt(model, 0), '1.00', '–', '–', '–', '–'],
      row('HTTP binary tensors (wrk)', h),
      row(`gRPC raw contents (${h2load ? 'h2load' : clientName})`, g),
      ...(h2load ? [row(`gRPC raw contents (${clientName}, its own CPU on the same cores)`, c)] : []),
    ];
    // Each ratio is the median of the rounds' own ratios: the sides of one round ran minutes apart
    // at most, so a change in the machine's load between rounds does not enter a ratio.
    const paired = (f: (r: (typeof rounds)[number]) => number): number => median(rounds.map(f));
    const grpcOverHttp = paired((r) => r.grpc.rps / r.http.rps);
    const httpOverModel = paired((r) => r.http.rps / r.model);
    const grpcOverModel = paired((r) => r.grpc.rps / r.model);
    const targets: TargetResult[] = [
      { name: 'gRPC req/s ÷ HTTP binary req/s (median of the rounds)', value: grpcOverHttp, target: '>= 1', pass: grpcOverHttp >= 1 },
      { name: 'HTTP binary ÷ model alone (median of the rounds)', value: httpOverModel, target: '>= 0.9', pass: httpOverModel >= 0.9 },
      { name: 'gRPC ÷ model alone (median of the rounds)', value: grpcOverModel, target: '>= 0.9', pass: grpcOverModel >= 0.9 },
    ];
    report(
      `gRPC and HTTP on the PaddleOCR classifier (${threads} onnxruntime thread${threads > 1 ? 's' : ''}, 1 worker, ${CONCURRENCY} in flight, medians of ${reps} rounds of ${seconds} s)`,
      [{ text: table(['side', 'req/s (items/s)', '÷ model', 'p50 ms', 'p99 ms', 'server process CPU ms/req (model included)', 'errors'], rows) }, { text: rounds.map((r, i) => `round ${i + 1}: ${r.load}`).join('\n') }],
      targets,
    );
    writeResults('grpc', args, { grpcClient: h2load ? 'h2load' : clientName, secondClient: h2load ? { name: clientName, ...c } : undefined, threads, workers: 1, maxBatchSize: BATCH, concurrency: CONCURRENCY, seconds, model, http: h, grpc: g, rounds }, targets);
  } finally {
    await stopServe(child);
    await session.release();
    rmSync(dir, { recursive: true, force: true });
  }
});
