import type * as Ort from 'onnxruntime-node';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { requireOptionalPeer } from '../core/optional-peer';
import { DecoderBatcher } from '../generate/decoder-batcher';
import { GenerationHost } from '../generate/generation-host';
import { describeModel, loadSession } from '../onnx';
import type { GenerativeServable } from '../serving';
import type { TensorData } from '../tensor/dtypes';
import { ConfigValueError } from './config-schema';

/**
 * The `parameters` that make a repository model a decoder, served on `/generate` and
 * `/generate_stream`: `decoder.token` and `decoder.logits` name its token input and scores output
 * (both needed), `decoder.state` and `decoder.cache` its state inputs and the outputs that feed
 * them (`"in:out,in:out"`, as `DecoderBatcher` takes them), `decoder.maskKey` the cache's mask
 * input, `stopTokens` (`"2,3"`) and `maxTokens` end a sequence.
 */
export const DECODER_PARAMETERS = ['decoder.token', 'decoder.logits', 'decoder.state', 'decoder.cache', 'decoder.maskKey', 'stopTokens', 'maxTokens'] as const;

/** A decoder's settings from its config's `parameters`. */
export interface DecoderSettings {
  readonly token: string;
  readonly logits: string;
  readonly state?: Readonly<Record<string, string>>;
  readonly cache?: Readonly<Record<string, string>>;
  readonly maskKey?: string;
  readonly stopTokens?: readonly number[];
  readonly maxTokens?: number;
}

/**
 * The decoder settings of a config's `parameters`, or `undefined` when it names none of them;
 * throws a `ConfigValueError` naming `file` for a malformed one (`where` names a parameter in its
 * messages: `microbatch serve`'s decoder flags name the flag).
 *
 * @example
 * ```ts
 * decoderSettings({ 'decoder.token': { string_value: 'token' }, 'decoder.logits': { string_value: 'logits' }, 'decoder.state': { string_value: 'state:next_state' } }, 'config.pbtxt');
 * // { token: 'token', logits: 'logits', state: { state: 'next_state' } }
 * ```
 */
export function decoderSettings(
  parameters: Readonly<Record<string, { string_value?: string }>>,
  file: string,
  where: (key: string) => string = (key) => `${file}: parameters[${JSON.stringify(key)}]`,
): DecoderSettings | undefined {
  const text = (key: string): string | undefined => parameters[key]?.string_value;
  if (!DECODER_PARAMETERS.some((k) => text(k) !== undefined)) return undefined;
  const token = text('decoder.token');
  const logits = text('decoder.logits');
  if (token === undefined || token === '' || logits === undefined || logits === '') {
    throw new ConfigValueError(`${file}: parameters`, `a decoder needs both "decoder.token" (its token input) and "decoder.logits" (its scores output), got ${JSON.stringify({ token, logits })}`);
  }
  const pairs = (key: 'decoder.state' | 'decoder.cache'): Record<string, string> | undefined => {
    const raw = text(key);
    if (raw === undefined) return undefined;
    const out: Record<string, string> = {};
    for (const pair of raw.split(',')) {
      const [input, output, extra] = pair.split(':').map((s) => s.trim());
      if (input === undefined || input === '' || output === undefined || output === '' || extra !== undefined) throw new ConfigValueError(where(key), `expected "input:output" pairs separated by commas, got ${JSON.stringify(raw)}`);
      out[input] = output;
    }
    return out;
  };
  const integers = (key: string, min: number): number[] | undefined => {
    const raw = text(key);
    if (raw === undefined) return undefined;
    const values = raw.split(',').map((s) => Number(s.trim()));
    if (raw.trim() === '' || values.some((v) => !Number.isInteger(v) || v < min)) throw new ConfigValueError(where(key), `expected integers >= ${min} separated by commas, got ${JSON.stringify(raw)}`);
    return values;
  };
  const maxTokens = integers('maxTokens', 1);
  if (maxTokens !== undefined && maxTokens.length !== 1) throw new ConfigValueError(where('maxTokens'), `expected one integer, got ${JSON.stringify(text('maxTokens'))}`);
  const state = pairs('decoder.state');
  const cache = pairs('decoder.cache');
  const stopTokens = integers('stopTokens', 0);
  const maskKey = text('decoder.maskKey');
  return {
    token,
    logits,
    ...(state === undefined ? {} : { state }),
    ...(cache === undefined ? {} : { cache }),
    ...(maskKey === undefined ? {} : { maskKey }),
    ...(stopTokens === undefined ? {} : { stopTokens }),
    ...(maxTokens === undefined ? {} : { maxTokens: maxTokens[0] as number }),
  };
}

/**
 * A started generation host for a decoder file: one onnxruntime session on this thread, a
 * `DecoderBatcher` built from `decoder`, and each new sequence's state made of zeros from the
 * model's own metadata (a state input `[N, ...]` starts as `[1, ...]`, a cache input
 * `[N, T, ...]` as `[1, 0, ...]`).
 *
 * @example
 * ```ts
 * const writer = await createDecoderHost('writer/1/model.onnx', { maxBatchSize: 16, name: 'writer' }, { token: 'token', logits: 'logits', state: { state: 'next_state' } });
 * ```
 */
export async function createDecoderHost(
  path: string,
  options: { readonly maxBatchSize: number; readonly name: string; readonly maxQueueSize?: number; readonly timeoutMs?: number; readonly threads?: number },
  decoder: DecoderSettings,
): Promise<GenerativeServable> {
  // Lazily, as microbatch/onnx does: onnxruntime-node is an optional peer dependency.
  const ort = requireOptionalPeer<typeof Ort>('onnxruntime-node', 'microbatch/repository');
  const session: InferenceSession = await loadSession(path, options.threads === undefined ? {} : { intraOpNumThreads: options.threads });
  try {
    const model = describeModel(session);
    const inputs = [decoder.token, ...Object.keys(decoder.state ?? {}), ...Object.keys(decoder.cache ?? {}), ...(decoder.maskKey === undefined ? [] : [decoder.maskKey])];
    const outputs = [decoder.logits, ...Object.values(decoder.state ?? {}), ...Object.values(decoder.cache ?? {})];
    const missing = [...inputs.filter((i) => !session.inputNames.includes(i)).map((i) => `input "${i}"`), ...outputs.filter((o) => !session.outputNames.includes(o)).map((o) => `output "${o}"`)];
    if (missing.length > 0) {
      throw new TypeError(`the decoder parameters name ${missing.join(', ')}, which the model does not have; its inputs are ${session.inputNames.join(', ')}, its outputs ${session.outputNames.join(', ')}`);
    }
    const tensor = (type: string, data: TensorData, dims: readonly number[]): Tensor => new ort.Tensor(type as Tensor.Type, data as Tensor.DataType, dims);
    const zeros = Object.keys({ ...decoder.state, ...decoder.cache }).map((name) => {
      const t = model.inputs.find((i) => i.name === name);
      const cached = decoder.cache?.[name] !== undefined;
      const dims = (t?.dims ?? []).map((d, i) => (i === 0 ? 1 : cached && i === 1 ? 0 : typeof d === 'number' ? d : 1));
      const count = dims.reduce((a, b) => a * b, 1);
      const Typed = t?.dtype === 'float16' ? Uint16Array : t?.dtype === 'int64' ? BigInt64Array : t?.dtype === 'int32' ? Int32Array : Float32Array;
      return { name, type: t?.dtype ?? 'float32', dims, make: () => new Typed(count) as TensorData };
    });
    const host = new GenerationHost((feeds: Record<string, Tensor>) => session.run(feeds) as Promise<Record<string, Tensor>>, {
      maxBatchSize: options.maxBatchSize,
      name: options.name,
      batcher: new DecoderBatcher<Tensor>({
        token: decoder.token,
        logits: decoder.logits,
        ...(decoder.state === undefined ? {} : { state: decoder.state }),
        ...(decoder.cache === undefined ? {} : { cache: decoder.cache }),
        ...(decoder.maskKey === undefined ? {} : { maskKey: decoder.maskKey }),
        tensor,
      }),
      initialState: () => Object.fromEntries(zeros.map((z) => [z.name, tensor(z.type, z.make(), z.dims)])),
      ...(decoder.stopTokens === undefined ? {} : { stopTokens: decoder.stopTokens }),
      ...(decoder.maxTokens === undefined ? {} : { maxTokens: decoder.maxTokens }),
      ...(options.maxQueueSize === undefined ? {} : { maxQueueSize: options.maxQueueSize }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
    // The session is released with the host: stop() drains the sequences, then this runs.
    const stop = host.stop.bind(host);
    return Object.assign(host, {
      stop: async (o?: { drain?: boolean }) => {
        await stop(o);
        await session.release();
      },
    }) as unknown as GenerativeServable;
  } catch (e) {
    await session.release().catch(() => undefined);
    throw e;
  }
}
