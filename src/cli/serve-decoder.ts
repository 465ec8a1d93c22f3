import { basename, resolve } from 'node:path';
import type { LogOptions } from '../http';
import { UsageError, numberFlag, type Options } from './args';
import type { Io } from './io';
import { listenOnTransports, type TransportFlags } from './serve-transports';

/** The flags that make `serve <model.onnx>` serve a decoder, and the config parameter each stands for. @internal */
const DECODER_FLAGS = {
  'decoder-token': 'decoder.token',
  'decoder-logits': 'decoder.logits',
  'decoder-state': 'decoder.state',
  'decoder-cache': 'decoder.cache',
  'decoder-mask-key': 'decoder.maskKey',
  'stop-tokens': 'stopTokens',
  'max-tokens': 'maxTokens',
} as const;

/** `serve`'s decoder flags, for its parser. @internal */
export const DECODER_OPTIONS: Options = Object.fromEntries(Object.keys(DECODER_FLAGS).map((f) => [f, { type: 'string' }]));

/** The decoder flags' lines of `serve --help`. @internal */
export const DECODER_HELP = `  --decoder-token NAME  serve a decoder (one token per model call) on /generate and
  --decoder-logits NAME /generate_stream: its token input and its scores output
  --decoder-state IN:OUT[,IN:OUT]  state inputs and the outputs that feed them next step
  --decoder-cache IN:OUT[,IN:OUT]  cache inputs (grown along axis 1) and their outputs
  --decoder-mask-key NAME          the cache's attention-mask input
  --stop-tokens ID[,ID] tokens that end a sequence
  --max-tokens N        the most tokens a sequence generates (a request may ask fewer)
`;

/** What `serve` resolved before handing a decoder over. @internal */
export interface DecoderServeContext extends TransportFlags {
  readonly name: string | undefined;
  readonly maxBatchSize: number;
  readonly maxQueueSize: number;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number | undefined;
  readonly threads: number;
  readonly log: LogOptions;
}

/** True when any decoder flag was given: `serve <model.onnx>` then serves a decoder. @internal */
export function wantsDecoder(values: Record<string, unknown>): boolean {
  return Object.keys(DECODER_FLAGS).some((f) => values[f] !== undefined);
}

/**
 * Serves a decoder file as a generator over HTTP (and gRPC's ModelStreamInfer with `--grpc-port`),
 * configured by the same settings a repository config's `parameters` give (`decoder.token`...),
 * so that a decoder works the same from a file and from a repository. The model runs on the main
 * thread; the flags that only a batching model takes are refused. Resolves once listening.
 * @internal
 */
export async function serveDecoder(cmd: string, modelPath: string, values: Record<string, unknown>, ctx: DecoderServeContext, io: Io): Promise<undefined> {
  const wrong = ['redis', 'claim-idle-ms', 'watch', 'warmup', 'workers', 'max-delay-ms', 'machine'].filter((f) => values[f] !== undefined);
  if (wrong.length > 0) throw new UsageError(`${cmd}: ${wrong.map((f) => `--${f}`).join(', ')} do${wrong.length === 1 ? 'es' : ''} not apply to a decoder (the --decoder-* flags serve one, on the main thread, step by step)`);
  for (const needed of ['decoder-token', 'decoder-logits'] as const) {
    if (typeof values[needed] !== 'string' || values[needed] === '') throw new UsageError(`${cmd}: a decoder needs --decoder-token NAME and --decoder-logits NAME (its token input and scores output); --${needed} is missing`);
  }
  numberFlag(cmd, values, 'max-tokens', { min: 1, integer: true }); // the usual message for a bad number
  const { decoderSettings, createDecoderHost } = await import('../repository');
  const flagOf = Object.fromEntries(Object.entries(DECODER_FLAGS).map(([flag, key]) => [key, flag]));
  const parameters = Object.fromEntries(Object.entries(DECODER_FLAGS).filter(([flag]) => typeof values[flag] === 'string').map(([flag, key]) => [key, { string_value: values[flag] as string }]));
  let settings;
  try {
    settings = decoderSettings(parameters, 'the command line', (key) => `${cmd}: --${flagOf[key] ?? key}`);
  } catch (e) {
    throw new UsageError((e as Error).message.replace(/^(microbatch serve: --[a-z-]+): /, '$1 '));
  }
  const name = ctx.name ?? basename(resolve(modelPath)).replace(/\.onnx$/i, '');
  const generator = await createDecoderHost(modelPath, { maxBatchSize: ctx.maxBatchSize, name, maxQueueSize: ctx.maxQueueSize, timeoutMs: ctx.timeoutMs, threads: ctx.threads }, settings as NonNullable<typeof settings>);
  const { createServingCore, handleShutdownSignals } = await import('../http');
  const core = createServingCore({
    generators: { [name]: generator },
    limits: { timeoutMs: ctx.timeoutMs, ...(ctx.maxBodyBytes !== undefined ? { maxBodyBytes: ctx.maxBodyBytes } : {}) },
    log: ctx.log,
  });
  const listening = await listenOnTransports(core, ctx);
  handleShutdownSignals([...listening.servers, core], { log: (line) => io.err(line) });
  io.err(`microbatch: decoder "${name}" (token ${settings?.token}, logits ${settings?.logits}) on the main thread × ${ctx.threads} thread${ctx.threads > 1 ? 's' : ''}, maxBatchSize ${ctx.maxBatchSize} sequences`);
  listening.announce(io, `(POST /v2/models/${encodeURIComponent(name)}/generate_stream)`, `(inference.GRPCInferenceService/ModelStreamInfer, model_name "${name}")`);
  return undefined;
}
