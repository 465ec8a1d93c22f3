/**
 * Scenario: what the live dashboard (`GET /dashboard`) costs.
 *
 * 1. **Closed page: nothing.** The overhead scenario's workload (an identity batch function,
 *    1024 closed-loop callers, maxBatchSize 64, `host.inference()` in-process) behind an inference
 *    server with the dashboard off, on with no page open, and on with one page's stream open. Each
 *    side in its own process, rounds in rotating order. Target: on with no page open is within
 *    noise of off (≥ 0.97×), since nothing subscribes to the hosts' events until a page opens.
 * 2. **One open page at ~1,000 requests/s: CPU.** A real HTTP server (the linear ONNX model
 *    inline) takes a Poisson load of 1,000 requests/s from a load generator in another process,
 *    with and without one page's event stream open (the stream read by that process too). The
 *    server process's CPU (`process.cpuUsage()`) over the measured window, as a share of one core,
 *    alternating conditions. Target: one page adds ≤ 1 percentage point.
 *
 *   npx ts-node bench/dashboard.ts --quick
 */
import { fork, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, get, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelHost } from '../src/engine/model-host';
import { createInferenceServer, type InferenceServable, type InferenceServer } from '../src/http';
import { createServingHost } from '../src/onnx/serving-host';
import { linearModel } from '../test/support/onnx-models';
import { closedLoop, fmt, main, median, openLoop, pick, poissonSchedule, Progress, ratio, report, table, writeResults, type TargetResult } from './harness';

const CLIENTS = 1024;
const BATCH = 64;
const TOTAL = 1_000_000;
const PROCESS_REPS = 3;
const SIDES = ['dashboard off', 'on, no page open', 'on, one page open'] as const;
type SideName = (typeof SIDES)[number];
/** Set in a child process: run this side of part 1 alone. */
const SIDE_ENV = 'MICROBATCH_DASHBOARD_SIDE';
/** Set in a child process: be part 2's load generator (JSON: port, rate, seconds, page). */
const LOAD_ENV = 'MICROBATCH_DASHBOARD_LOAD';
const RATE = 1000;

/** Opens `/dashboard/events` on `port` like a page does; resolves once the first event came. */
function openPage(port: number): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path: '/dashboard/events', agent: false }, (res) => {
      res.once('data', () => resolve(() => req.destroy()));
      res.resume();
    });
    req.on('error', reject);
  });
}

// ---- part 1 -------------------------------------------------------------------------------------

const identity = async (xs: readonly number[]): Promise<readonly number[]> => xs;

async function runSide(name: SideName): Promise<number[]> {
  const host = new ModelHost(identity, { name: 'identity', maxBatchSize: BATCH });
  // The server only lists the host (the registry wants a signature); the load calls host.inference() directly.
  const servable = { name: 'identity', model: { inputs: [], outputs: [] }, options: host.options, get stats() { return host.stats; }, inference: (x: number) => host.inference(x), stop: () => host.stop() } as unknown as InferenceServable;
  const server: InferenceServer = createInferenceServer({ models: { identity: servable }, dashboard: name !== 'dashboard off' });
  const { port } = await server.listen(0);
  const close = name === 'on, one page open' ? await openPage(port) : () => undefined;
  const reps: number[] = [];
  for (let r = -1; r < PROCESS_REPS; r++) {
    const res = await closedLoop({ clients: CLIENTS, total: TOTAL, call: (i) => host.inference(i) });
    if (res.failed > 0) throw new Error(`${name}: ${res.failed} requests failed`);
    if (r >= 0) reps.push(res.throughput);
  }
  close();
  await server.close();
  return reps;
}

function isolatedRounds(rounds: number, progress: Progress): Map<SideName, number[]> {
  const out = new Map<SideName, number[]>(SIDES.map((s) => [s, []]));
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < SIDES.length; k++) {
      const side = SIDES[(k + round) % SIDES.length] as SideName;
      progress.update(`round ${round + 1}/${rounds} ${side}`);
      const r = spawnSync(process.execPath, ['-r', 'ts-node/register', __filename], { env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1', [SIDE_ENV]: side }, encoding: 'utf8', maxBuffer: 1 << 20 });
      if (r.status !== 0) throw new Error(`${side}: its process failed (${String(r.status ?? r.signal)}): ${r.stderr}`);
      (out.get(side) as number[]).push(median(JSON.parse(r.stdout.trim().split('\n').pop() as string) as number[]));
    }
  }
  return out;
}

// ---- part 2 -------------------------------------------------------------------------------------

interface LoadPlan {
  readonly port: number;
  readonly seconds: number;
  readonly page: boolean;
}

/** The load generator's process: one page's stream if asked, then RATE requests/s for `seconds`. */
async function generateLoad(plan: LoadPlan): Promise<void> {
  const close = plan.page ? await openPage(plan.port) : () => undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const body = Buffer.from(JSON.stringify({ inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }));
  const call = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: plan.port, path: '/v2/models/linear/infer', method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  await openLoop(poissonSchedule(RATE, 1000, 7), call); // warm the connections
  process.send?.({ phase: 'start' });
  const r = await openLoop(poissonSchedule(RATE, plan.seconds * 1000), call);
  process.send?.({ phase: 'end', completed: r.completed, failed: r.failed, throughput: r.throughput });
  close();
  agent.destroy();
}

interface CpuRun {
  readonly page: boolean;
  /** The server process's CPU over the window, in percent of one core. */
  readonly cpuPercent: number;
  readonly throughput: number;
}

/** One window: the server here, the load (and the page, if any) in a child process. */
function measureCpu(port: number, seconds: number, page: boolean): Promise<CpuRun> {
  return new Promise((resolve, reject) => {
    const child = fork(__filename, [], { env: { ...process.env, TS_NODE_TRANSPILE_ONLY: '1', [LOAD_ENV]: JSON.stringify({ port, seconds, page } satisfies LoadPlan) }, execArgv: ['-r', 'ts-node/register'] });
    let cpu0 = process.cpuUsage();
    let t0 = performance.now();
    child.on('message', (m: { phase: string; completed?: number; failed?: number; throughput?: number }) => {
      if (m.phase === 'start') {
        cpu0 = process.cpuUsage();
        t0 = performance.now();
        return;
      }
      const cpu = process.cpuUsage(cpu0);
      const wallUs = (performance.now() - t0) * 1000;
      if ((m.failed ?? 0) > 0) reject(new Error(`${m.failed} requests failed`));
      else resolve({ page, cpuPercent: ((cpu.user + cpu.system) / wallUs) * 100, throughput: m.throughput ?? 0 });
    });
    child.on('exit', (code) => code !== 0 && reject(new Error(`the load generator exited with ${code}`)));
  });
}

async function cpuRounds(rounds: number, seconds: number, progress: Progress): Promise<CpuRun[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mb-bench-dash-'));
  writeFileSync(join(dir, 'linear.onnx'), linearModel(4, 3));
  const host = await createServingHost(join(dir, 'linear.onnx'), { name: 'linear', maxBatchSize: 32, workers: 0 });
  const server = createInferenceServer({ models: { linear: host }, dashboard: true });
  const { port } = await server.listen(0);
  const runs: CpuRun[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const page of round % 2 === 0 ? [false, true] : [true, false]) {
        progress.update(`CPU round ${round + 1}/${rounds} ${page ? 'one page' : 'no page'}`);
        runs.push(await measureCpu(port, seconds, page));
      }
    }
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return runs;
}

// ---- entry --------------------------------------------------------------------------------------

const side = process.env[SIDE_ENV] as SideName | undefined;
const load = process.env[LOAD_ENV];
if (side !== undefined) {
  runSide(side).then(
    (reps) => process.stdout.write(`${JSON.stringify(reps)}\n`),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
} else if (load !== undefined) {
  generateLoad(JSON.parse(load) as LoadPlan).then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
} else {
  main(async (args) => {
    const rounds = args.reps ?? pick(args, 3, 7);
    const progress = new Progress('dashboard', args.progress);
    const closed = isolatedRounds(rounds, progress);
    const cpuRoundsN = pick(args, 3, 6);
    const seconds = pick(args, 5, 10);
    const cpu = await cpuRounds(cpuRoundsN, seconds, progress);
    progress.done();

    const off = median(closed.get('dashboard off') ?? []);
    const rows = SIDES.map((s) => {
      const tp = closed.get(s) ?? [];
      return [s, fmt(median(tp), 0), `${fmt(Math.min(...tp), 0)} – ${fmt(Math.max(...tp), 0)}`, `${fmt(ratio(median(tp), off), 3)}×`];
    });
    const cpuOf = (page: boolean): number[] => cpu.filter((r) => r.page === page).map((r) => r.cpuPercent);
    const added = median(cpuOf(true)) - median(cpuOf(false));
    const cpuRows = [false, true].map((page) => {
      const c = cpuOf(page);
      return [page ? 'one page open' : 'no page', fmt(median(c), 1), `${fmt(Math.min(...c), 1)} – ${fmt(Math.max(...c), 1)}`, fmt(median(cpu.filter((r) => r.page === page).map((r) => r.throughput)), 0)];
    });
    const closedRatio = ratio(median(closed.get('on, no page open') ?? []), off);
    const targets: TargetResult[] = [
      { name: 'dashboard on, no page open / off (requests/s, own process)', value: closedRatio, target: '≥ 0.97 (noise)', pass: closedRatio >= 0.97 },
      { name: `CPU one page adds at ${RATE} requests/s (percentage points of one core)`, value: added, target: '≤ 1', pass: added <= 1 },
      { name: 'dashboard on, one page open / off (requests/s, report)', value: ratio(median(closed.get('on, one page open') ?? []), off), target: 'report', pass: true },
    ];
    report(
      'Dashboard overhead',
      [
        { heading: `Closed loop: identity function, ${CLIENTS} callers, ${TOTAL.toLocaleString('en-US')} requests per rep, maxBatchSize ${BATCH}, each side in its own process (median of ${rounds} rounds)`, text: table(['side', 'requests/s', 'range', 'vs off'], rows) },
        { heading: `Server CPU at ${RATE} requests/s over HTTP (linear ONNX model inline), ${seconds} s windows, ${cpuRoundsN} per condition`, text: table(['condition', 'CPU % of one core (median)', 'range', 'answered/s'], cpuRows) },
      ],
      targets,
    );
    writeResults('dashboard', args, { config: { clients: CLIENTS, maxBatchSize: BATCH, requestsPerRep: TOTAL, rounds, rate: RATE, seconds, cpuRounds: cpuRoundsN }, closed: Object.fromEntries(closed), cpu }, targets);
  });
}
