import { statSync } from 'node:fs';
import type { HostObserver } from '../core/observer';
import type { LogOptions, MetricsSource } from '../http';
import type { ModelControlMode } from '../repository';
import { numberFlag, UsageError } from './args';
import type { Io } from './io';
import { DECODER_OPTIONS } from './serve-decoder';
import { listenOnTransports, type TransportFlags } from './serve-transports';

/** The flags of `serve <dir>` only, with their defaults (Triton's). @internal */
export const REPOSITORY_FLAG_DEFAULTS = { 'model-control-mode': 'none', 'repository-poll-secs': 15 } as const;

/** `serve --help`'s section on model repositories. @internal */
export const REPOSITORY_HELP = `Model repository (serve <dir>): a Triton model repository, <dir>/<model>/config.pbtxt (optional)
and <dir>/<model>/<version>/model.onnx; each model's batching comes from its config, the flags
above are the defaults where a config says nothing. POST /v2/repository/index, .../models/NAME/load
and .../unload (Triton's repository extension).
  --model-control-mode MODE  none: load every model at start; poll: the same, then re-read the
                        folder every --repository-poll-secs (new versions load, removed ones
                        drain); explicit: load only --load-model models, then on request
                                                                         (default ${REPOSITORY_FLAG_DEFAULTS['model-control-mode']})
  --load-model NAME     with explicit: load NAME at start (repeatable; * loads all)
  --repository-poll-secs N  with poll: seconds between reads of the folder (default ${REPOSITORY_FLAG_DEFAULTS['repository-poll-secs']})
`;

/** The repository flags `serve` parses. @internal */
export const REPOSITORY_OPTIONS = {
  'model-control-mode': { type: 'string' },
  'load-model': { type: 'string', multiple: true },
  'repository-poll-secs': { type: 'string' },
} as const;

/** True when `path` is a folder: `serve` then serves it as a model repository. @internal */
export function isRepositoryFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** What `serve` has worked out from the shared flags, for a repository's models and server. @internal */
export interface RepositoryServeContext extends TransportFlags {
  readonly maxBatchSize: number;
  readonly maxDelayMs: number;
  readonly maxQueueSize: number;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number | undefined;
  readonly maxTimeoutMs: number;
  readonly workers: number;
  readonly threads: number;
  readonly machine: 'shared' | 'dedicated';
  readonly log: LogOptions;
  readonly metrics: { observer: HostObserver; registry: MetricsSource } | undefined;
}

/**
 * Refuses the repository flags with a model file, and the file-only flags with a folder, before
 * anything loads. @internal
 */
export function checkServeTarget(cmd: string, values: Record<string, unknown>, folder: boolean): void {
  const given = (flags: readonly string[]): string[] => flags.filter((f) => values[f] !== undefined);
  const wrong = folder ? given(['name', 'redis', 'claim-idle-ms', 'watch', 'warmup', ...Object.keys(DECODER_OPTIONS)]) : given(Object.keys(REPOSITORY_OPTIONS));
  if (wrong.length > 0) {
    throw new UsageError(
      folder
        ? `${cmd}: ${wrong.map((f) => `--${f}`).join(', ')} appl${wrong.length === 1 ? 'ies' : 'y'} to one model file, not to a model repository folder (there, model names are the folder names, --model-control-mode poll reloads, and model_warmup in a config warms a model up)`
        : `${cmd}: ${wrong.map((f) => `--${f}`).join(', ')} need${wrong.length === 1 ? 's' : ''} a model repository folder, not a model file`,
    );
  }
}

/** Runs `microbatch serve <dir>`: the repository's models over HTTP; resolves once listening. @internal */
export async function serveRepository(cmd: string, dir: string, values: Record<string, unknown>, ctx: RepositoryServeContext, io: Io): Promise<undefined> {
  const raw = values['model-control-mode'] ?? REPOSITORY_FLAG_DEFAULTS['model-control-mode'];
  const mode = typeof raw === 'string' ? raw.toLowerCase() : raw;
  if (mode !== 'none' && mode !== 'poll' && mode !== 'explicit') throw new UsageError(`${cmd}: --model-control-mode must be none, poll or explicit, got ${JSON.stringify(raw)}`);
  const loadModels = (values['load-model'] as string[] | undefined) ?? [];
  if (loadModels.length > 0 && mode !== 'explicit') throw new UsageError(`${cmd}: --load-model needs --model-control-mode explicit (in ${mode} mode every model loads at start)`);
  if (loadModels.includes('*') && loadModels.length > 1) throw new UsageError(`${cmd}: --load-model * loads every model and must be the only --load-model`);
  const pollSecs = numberFlag(cmd, values, 'repository-poll-secs', { min: 0 });
  if (pollSecs !== undefined && mode !== 'poll') throw new UsageError(`${cmd}: --repository-poll-secs needs --model-control-mode poll`);

  const { ModelRepository } = await import('../repository');
  const { createServingCore, handleShutdownSignals } = await import('../http');
  // Room for a full queue plus a running batch per worker of every model.
  const core = createServingCore({
    filledLater: true,
    limits: { timeoutMs: ctx.timeoutMs, maxTimeoutMs: ctx.maxTimeoutMs, ...(ctx.maxBodyBytes !== undefined ? { maxBodyBytes: ctx.maxBodyBytes } : {}) },
    log: ctx.log,
  });
  const repository = new ModelRepository(dir, core, {
    modelControlMode: mode as ModelControlMode,
    loadModels,
    // Triton: 0 means the folder is read at start only.
    ...(mode === 'poll' && pollSecs !== 0 ? { pollIntervalMs: (pollSecs ?? REPOSITORY_FLAG_DEFAULTS['repository-poll-secs']) * 1000 } : {}),
    defaults: {
      maxBatchSize: ctx.maxBatchSize,
      maxDelayMs: ctx.maxDelayMs,
      maxQueueSize: ctx.maxQueueSize,
      timeoutMs: ctx.timeoutMs,
      workers: ctx.workers,
      threads: ctx.threads,
      machine: ctx.machine,
      ...(ctx.metrics !== undefined ? { observer: ctx.metrics.observer } : {}),
    },
    log: (level, line) => core.logger.line(level, line),
  });
  await repository.start();
  if (mode === 'poll' && pollSecs === 0) await repository.close();
  // The same core over gRPC too: its calls reach the repository's models and versions as HTTP's do.
  const listening = await listenOnTransports(core, ctx);
  handleShutdownSignals([...listening.servers, repository, core], { log: (line) => io.err(line) });
  const rows = repository.index();
  const ready = rows.filter((r) => r.state === 'READY').map((r) => `${r.name}/${r.version}`);
  const failed = rows.filter((r) => r.state === 'UNAVAILABLE').map((r) => `${r.name}${r.version === undefined ? '' : `/${r.version}`}: ${r.reason}`);
  io.err(
    `microbatch: model repository ${repository.dir} (${mode} mode): serving ${ready.length === 0 ? 'no model yet' : ready.join(', ')}` +
      `${failed.length === 0 ? '' : `; not loaded: ${failed.join('; ')}`}${ctx.metrics === undefined ? '; /metrics is off: install prom-client (npm install prom-client) to enable it' : ''}`,
  );
  listening.announce(io, '(POST /v2/repository/index lists the models)', '(inference.GRPCInferenceService)');
  return undefined;
}
