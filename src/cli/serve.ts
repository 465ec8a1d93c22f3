import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { HostObserver } from '../core/observer';
import { availableParallelism } from 'node:os';
import type { LogLevel, LogOptions, MetricsSource } from '../http';
import { HOST_DEFAULTS, SERVING_DEFAULTS } from '../core/defaults';
import { DEFAULT_LIMITS } from '../serving';
import type * as PromAdapter from '../observe/prometheus';
import type * as PromClient from 'prom-client';
import { numberFlag, onePositional, parse, UsageError, type Options } from './args';
import { dedicatedMachineThreads, sharedMachineThreads } from '../executors/worker/thread-budget';
import type { Io } from './io';
import type { ServingHost } from '../onnx';
import type { RedisReplica } from '../remote/redis';
import { watchModelFile } from './watch-model';
import { holdHeapBallast } from './heap-ballast';
import { listenOnTransports } from './serve-transports';
import { DECODER_HELP, DECODER_OPTIONS, serveDecoder, wantsDecoder } from './serve-decoder';
import { checkServeTarget, isRepositoryFolder, REPOSITORY_FLAG_DEFAULTS, REPOSITORY_HELP, REPOSITORY_OPTIONS, serveRepository } from './serve-repository';

/**
 * The defaults of `serve`'s flags, which the help states and the parsing applies. A model option's
 * comes from the library's table: its own default where a server agrees with it, and
 * `SERVING_DEFAULTS` where serving deliberately differs (that object says why). `claim-idle-ms` is
 * shown only: the replica applies its own default (`RedisOptions.claimIdleMs`) when the flag is
 * absent, and a test holds the two equal. @internal
 */
export const SERVE_DEFAULTS = {
  port: 8080,
  host: '127.0.0.1',
  'max-batch-size': SERVING_DEFAULTS.maxBatchSize,
  'max-delay-ms': HOST_DEFAULTS.maxDelayMs,
  'max-queue-size': SERVING_DEFAULTS.maxQueueSize,
  'timeout-ms': SERVING_DEFAULTS.timeoutMs,
  'max-body-bytes': DEFAULT_LIMITS.maxBodyBytes,
  workers: 1,
  machine: 'shared',
  'log-level': 'info',
  'log-format': 'text',
  'claim-idle-ms': 30_000,
  'cors-origin': 'none',
  'heap-ballast-mb': 32,
  ...REPOSITORY_FLAG_DEFAULTS,
} as const;
const D = SERVE_DEFAULTS;

/** `microbatch serve --help`. */
export const SERVE_HELP = `Usage: microbatch serve <model.onnx> [options]
       microbatch serve <model-repository-dir> [options]

Serves an ONNX model over HTTP with dynamic batching: concurrent requests are merged into one
model call. Open Inference Protocol (KServe v2 / Triton) JSON and binary tensors on
POST /v2/models/NAME/infer; GET /v2/models/NAME, /v2, /v2/health/live, /v2/health/ready, /metrics.
SIGTERM or SIGINT drains and exits 0.

Options:
  --port N              port to listen on; 0 picks a free one            (default ${D.port})
  --host ADDR           interface to bind; 0.0.0.0 exposes it            (default ${D.host})
  --grpc-port N         also serve the Open Inference Protocol over gRPC on this port
                        (plaintext, on --host; needs @grpc/grpc-js and @grpc/proto-loader)
  --name NAME           model name in URLs                               (default: file name without .onnx)
  --max-batch-size N    most rows in one model call                      (default ${D['max-batch-size']})
  --max-delay-ms MS     wait for a fuller batch when the model is free   (default ${D['max-delay-ms']})
  --max-queue-size N    waiting requests before 503 + Retry-After        (default ${D['max-queue-size']})
  --timeout-ms MS       default per-request time limit (504 past it)     (default ${D['timeout-ms']})
  --max-body-bytes N    largest request body (413 past it)               (default ${D['max-body-bytes']})
  --workers N           worker threads running the model; 0: inline     (default ${D.workers})
  --threads N           onnxruntime threads per worker         (default: (cores - 1) / workers, >= 1)
  --machine KIND        shared: leave the event loop a core, no spin-waiting; dedicated:
                        every core to the model, pool threads spin between runs (faster on
                        an otherwise idle machine, much slower under contention)  (default ${D.machine})
  --log-level LEVEL     debug, info, warn, error or silent; refusals are
                        summarised per 5 s, not logged one by one        (default ${D['log-level']})
  --log-format FORMAT   text, or json (one object per line)              (default ${D['log-format']})
  --redis URL           also be a replica of the model on Redis: pull requests that front
                        ends (connectRedisHost) send, as docs/scale-out.md describes
  --claim-idle-ms MS    with --redis: take over requests a dead replica held
                        after this long                                  (default ${D['claim-idle-ms']})
  --watch               reload the model when its file changes: the new version loads
                        beside the serving one, which answers until it is ready; a file
                        that fails to load is logged and the old version keeps serving
  --warmup              run zero-filled batches (sizes 1, 2, 4... up to --max-batch-size)
                        before serving, and before each --watch reload takes over, so
                        the first requests do not pay the model's first-run cost
  --cors-origin ORIGIN  let pages from ORIGIN (https://app.example.com, or *) call the
                        server from a browser (CORS); repeat it or separate origins
                        with commas                                      (default ${D['cors-origin']})
  --no-dashboard        do not serve the live dashboard (GET /dashboard: charts per model)
  --heap-ballast-mb N   MiB the server holds unused so that V8 does not collect its small
                        heap over and over under load (a fifth of a core on 2 cores);
                        0 holds none                                     (default ${D['heap-ballast-mb']})
  -h, --help            show this help

${REPOSITORY_HELP}
A decoder (a generative model called once per token) is served from its file with:
${DECODER_HELP}
Example:
  microbatch serve model.onnx --port 8080 --max-batch-size 32
  curl -s localhost:8080/v2/models/model
  microbatch serve model.onnx --redis redis://redis.internal:6379   # one replica of many
  microbatch serve models/ --model-control-mode explicit --load-model classifier
  microbatch serve writer.onnx --decoder-token token --decoder-logits logits --decoder-state state:next_state
`;

const OPTIONS: Options = {
  port: { type: 'string' },
  'grpc-port': { type: 'string' },
  host: { type: 'string' },
  name: { type: 'string' },
  'max-batch-size': { type: 'string' },
  'max-delay-ms': { type: 'string' },
  'max-queue-size': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'max-body-bytes': { type: 'string' },
  workers: { type: 'string' },
  threads: { type: 'string' },
  machine: { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  redis: { type: 'string' },
  'claim-idle-ms': { type: 'string' },
  watch: { type: 'boolean' },
  warmup: { type: 'boolean' },
  'cors-origin': { type: 'string', multiple: true },
  'no-dashboard': { type: 'boolean' },
  'heap-ballast-mb': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  ...REPOSITORY_OPTIONS,
  ...DECODER_OPTIONS,
};

/**
 * Metrics when prom-client is installed (an optional peer dependency): the Prometheus adapter's
 * observer for the host and its registry for `/metrics`. Without prom-client, none.
 */
function loadMetrics(maxBatchSize: number): { observer: HostObserver; registry: MetricsSource; watch(host: ServingHost): void } | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional: only when prom-client is there
    const { Registry, collectDefaultMetrics } = require('prom-client') as typeof PromClient;
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- it imports prom-client itself
    const { prometheusMetrics } = require('../observe/prometheus') as typeof PromAdapter;
    const registry = new Registry();
    const prom = prometheusMetrics({ registry, maxBatchSize });
    // The process's own CPU, memory and event-loop lag beside the model's: an overloaded server
    // shows in both.
    collectDefaultMetrics({ register: registry });
    // prom-client's `nodejs_active_*_total` are gauges named as counters, which `promtool check
    // metrics` rejects; `nodejs_active_handles`, `_requests` and `_resources` (by type) stay.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
    return { observer: prom.observer, registry, watch: (host) => prom.watch(host) };
  } catch {
    return undefined;
  }
}

/** `--log-level` and `--log-format` as the server's `log` option, or a {@link UsageError}. */
function logOptions(cmd: string, values: Record<string, unknown>, io: Io, levels: readonly LogLevel[]): LogOptions {
  const level = values['log-level'] ?? D['log-level'];
  if (!levels.includes(level as LogLevel)) throw new UsageError(`${cmd}: --log-level must be one of ${levels.join(', ')}, got ${JSON.stringify(level)}`);
  const format = values['log-format'] ?? D['log-format'];
  if (format !== 'text' && format !== 'json') throw new UsageError(`${cmd}: --log-format must be text or json, got ${JSON.stringify(format)}`);
  return { level: level as LogLevel, format, write: (line) => io.err(line) };
}

/** Runs `microbatch serve`; resolves once listening (the process then lives until a signal). @internal */
export async function serve(argv: readonly string[], io: Io): Promise<number | undefined> {
  const cmd = 'microbatch serve';
  const { values, positionals } = parse(cmd, argv, OPTIONS);
  if (values.help === true) {
    io.out(SERVE_HELP);
    return 0;
  }
  const modelPath = onePositional(cmd, positionals, 'model path (an .onnx file, or a model repository folder)');
  const folder = isRepositoryFolder(modelPath);
  checkServeTarget(cmd, values, folder);
  const port = numberFlag(cmd, values, 'port', { min: 0, max: 65535, integer: true }) ?? D.port;
  const grpcPort = numberFlag(cmd, values, 'grpc-port', { min: 0, max: 65535, integer: true });
  const maxBatchSize = numberFlag(cmd, values, 'max-batch-size', { min: 1, integer: true }) ?? D['max-batch-size'];
  const maxDelayMs = numberFlag(cmd, values, 'max-delay-ms', { min: 0 }) ?? D['max-delay-ms'];
  const maxQueueSize = numberFlag(cmd, values, 'max-queue-size', { min: 1, integer: true }) ?? D['max-queue-size'];
  const timeoutMs = numberFlag(cmd, values, 'timeout-ms', { min: 1 }) ?? D['timeout-ms'];
  const maxBodyBytes = numberFlag(cmd, values, 'max-body-bytes', { min: 1, integer: true });
  const workers = numberFlag(cmd, values, 'workers', { min: 0, max: 256, integer: true }) ?? D.workers;
  const machine = values.machine ?? D.machine;
  if (machine !== 'shared' && machine !== 'dedicated') throw new UsageError(`${cmd}: --machine must be shared or dedicated, got ${JSON.stringify(machine)}`);
  const threads =
    numberFlag(cmd, values, 'threads', { min: 1, max: 1024, integer: true }) ??
    (machine === 'dedicated' ? dedicatedMachineThreads : sharedMachineThreads)(availableParallelism(), workers);
  const host = typeof values.host === 'string' ? values.host : D.host;
  const name = typeof values.name === 'string' ? values.name : undefined;
  if (name !== undefined && (name === '' || name.includes('/'))) throw new UsageError(`${cmd}: --name must be non-empty and contain no "/", got ${JSON.stringify(name)}`);
  const ballastMb = numberFlag(cmd, values, 'heap-ballast-mb', { min: 0, max: 65536, integer: true }) ?? D['heap-ballast-mb'];
  if (!existsSync(modelPath)) throw new UsageError(`${cmd}: no such model file: ${modelPath}`);
  // The HTTP server (microbatch/http), loaded only now, so that --help and the usage errors above
  // answer without it; --log-level is checked against its levels.
  const http = await import('../http');
  const log = logOptions(cmd, values, io, http.LOG_LEVELS);
  holdHeapBallast(ballastMb);
  if (folder) {
    const corsOrigins = await corsFlag(cmd, values['cors-origin']);
    const metrics = loadMetrics(maxBatchSize);
    const maxTimeoutMs = Math.max(timeoutMs, DEFAULT_LIMITS.maxTimeoutMs);
    const dashboard = values['no-dashboard'] !== true;
    return serveRepository(cmd, modelPath, values, { port, host, grpcPort, dashboard, maxBatchSize, maxDelayMs, maxQueueSize, timeoutMs, maxBodyBytes, maxTimeoutMs, workers, threads, machine, log, corsOrigins, metrics }, io);
  }
  if (wantsDecoder(values)) {
    const corsOrigins = await corsFlag(cmd, values['cors-origin']);
    const ctx = { port, host, grpcPort, dashboard: values['no-dashboard'] !== true, name, maxBatchSize, maxQueueSize, timeoutMs, maxBodyBytes, threads, log, corsOrigins, metrics: loadMetrics(maxBatchSize) };
    return serveDecoder(cmd, modelPath, values, ctx, io);
  }
  const redisUrl = typeof values.redis === 'string' ? values.redis : undefined;
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) throw new UsageError(`${cmd}: --redis must be a redis:// or rediss:// URL`);
  const claimIdleMs = numberFlag(cmd, values, 'claim-idle-ms', { min: 1 });
  if (claimIdleMs !== undefined && redisUrl === undefined) throw new UsageError(`${cmd}: --claim-idle-ms needs --redis`);
  const corsOrigins = await corsFlag(cmd, values['cors-origin']);

  // Loaded only now, so that --help and usage errors answer without loading onnxruntime.
  const { createOnnxHost } = await import('../onnx');
  const { handleShutdownSignals } = http;
  const metrics = loadMetrics(maxBatchSize);
  const model = await createOnnxHost(modelPath, {
    maxBatchSize,
    maxDelayMs,
    maxQueueSize,
    workers,
    threads,
    machine,
    // The model's URL name: --name, else the file's name without `.onnx`.
    name: name ?? basename(resolve(modelPath)).replace(/\.onnx$/i, ''),
    ...(metrics !== undefined ? { observer: metrics.observer } : {}),
    ...(values.warmup === true ? { warmup: true as const } : {}),
  });
  metrics?.watch(model);
  // Room for a full queue plus a running batch per worker, so that --max-queue-size is the bound
  // clients meet, not the server's own default.
  const maxConcurrentRequests = maxQueueSize + maxBatchSize * Math.max(1, workers);
  // One core for every transport: HTTP and gRPC calls share the host's queue and its batches.
  const core = http.createServingCore({
    models: { [model.name]: model },
    limits: { timeoutMs, maxTimeoutMs: Math.max(timeoutMs, DEFAULT_LIMITS.maxTimeoutMs), maxConcurrentRequests, ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}) },
    log,
  });
  const listening = await listenOnTransports(core, { port, host, grpcPort, dashboard: values['no-dashboard'] !== true, corsOrigins, metrics });
  // A replica stops pulling and answers what it holds before the server drains and stops the model.
  const replica = redisUrl === undefined ? undefined : await startReplica(model, redisUrl, claimIdleMs, io);
  const watching = values.watch === true ? await watchModelFile(model.modelPath, model, (line) => io.err(line)) : undefined;
  handleShutdownSignals([...listening.servers, core], {
    log: (line) => io.err(line),
    beforeClose: async () => {
      await watching?.close();
      await replica?.close();
    },
  });
  io.err(
    `microbatch: model "${model.name}" (${model.model.inputs.map((t) => `${t.name} ${t.dtype}[${t.dims.join(',')}]`).join(', ')}) ` +
      `on ${workers === 0 ? 'the main thread' : `${workers} worker${workers > 1 ? 's' : ''}`} × ${threads} thread${threads > 1 ? 's' : ''}${machine === 'dedicated' ? ' (dedicated: spinning)' : ''}, ` +
      `maxBatchSize ${maxBatchSize}, maxDelayMs ${maxDelayMs}, maxQueueSize ${maxQueueSize}${watching === undefined ? '' : '; watching the file for new versions'}${metrics === undefined ? '; /metrics is off: install prom-client (npm install prom-client) to enable it' : ''}`,
  );
  listening.announce(io, `(POST /v2/models/${encodeURIComponent(model.name)}/infer)`, `(inference.GRPCInferenceService/ModelInfer, model_name "${model.name}")`);
  return undefined;
}

/** `--cors-origin` (repeated, or comma-separated) as the server's `corsOrigins`, checked now: a bad origin is a {@link UsageError}. */
async function corsFlag(cmd: string, raw: unknown): Promise<string[]> {
  const origins = (Array.isArray(raw) ? (raw as string[]) : []).flatMap((v) => v.split(',')).map((o) => o.trim()).filter((o) => o !== '');
  const { checkCorsOrigins } = await import('../http/cors');
  try {
    checkCorsOrigins(`${cmd}: --cors-origin`, origins);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return origins;
}

/** `--redis`: serves the model to front ends through Redis too (loaded only then: it needs the redis package). */
async function startReplica(model: ServingHost, url: string, claimIdleMs: number | undefined, io: Io): Promise<RedisReplica> {
  const { serveHostOnRedis } = await import('../remote/redis/serve-on-redis');
  const { redactUrl } = await import('../remote/redis/connection');
  const replica = await serveHostOnRedis(model, {
    url,
    model: model.name,
    ...(claimIdleMs === undefined ? {} : { claimIdleMs }),
    // An operator wants to see work moving between replicas: one line per takeover.
    onTakeover: (t) =>
      io.err(`microbatch: took over ${t.claimed.length} request(s) of replica ${t.from} (${t.reason}), cleared ${t.cleared}${t.removed ? ', removed it from the group' : ''}`),
  });
  io.err(`microbatch: replica ${replica.consumer} of "${model.name}" on ${redactUrl(url)}: front ends reach it with connectRedisHost({ url, model: ${JSON.stringify(model.name)} })`);
  return replica;
}
