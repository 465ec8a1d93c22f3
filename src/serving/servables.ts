import type { ServableWith } from '../core/servable';
import type { TensorLike } from '../tensor/tensor-like';

/**
 * What the serving core needs from a batching model: a `Servable` whose `inference()` takes
 * the feeds of one request (tensors by input name) and answers its outputs, with the model's
 * signature, which requests are checked against before they are queued. An `OnnxHost` from
 * `createOnnxHost` is one, and so is a worker-backed host from `createServingHost`.
 *
 * @example
 * ```ts
 * const host: InferenceServable = await createOnnxHost('model.onnx', { maxBatchSize: 32 });
 * ```
 */
export type InferenceServable = ServableWith<'inference' | 'model' | 'stop', Record<string, TensorLike>, Record<string, TensorLike>>;

/**
 * What the serving core needs from a generative model: a `Servable` with `generate()` and `stop()`
 * (`GenerationHost` is one).
 *
 * @example
 * ```ts
 * const generator: GenerativeServable = new GenerationHost(step, { maxBatchSize: 16, initialState });
 * ```
 */
export type GenerativeServable = ServableWith<'generate' | 'stop'>;

/**
 * Turns text into token ids and back, for `text_input` / `text_output` on the generate routes.
 *
 * @example
 * ```ts
 * const tokenizer: Tokenizer = { encode: (text) => [...text].map((c) => c.charCodeAt(0)), decode: (ids) => String.fromCharCode(...ids) };
 * ```
 */
export interface Tokenizer {
  /** Token ids of a text (add the begin-of-sequence token here if the model needs one). */
  encode(text: string): number[];
  /** The text of token ids; the stream calls it with one token per event. */
  decode(tokens: readonly number[]): string;
}

/**
 * A generative model with a tokenizer.
 *
 * @example
 * ```ts
 * const entry: GeneratorEntry = { host: generationHost, tokenizer: { encode, decode } };
 * ```
 */
export interface GeneratorEntry {
  /** The generative model. */
  readonly host: GenerativeServable;
  /** Its tokenizer: requests may then send `text_input`, and answers carry `text_output`. @default none */
  readonly tokenizer?: Tokenizer;
}

/** The version of a model that names none. */
export const DEFAULT_VERSION = '1';

/**
 * The version a servable serves now, the only one a request naming a version may name: its
 * `version` (a `ModelHost` counts its reloads), else `'1'`.
 *
 * @example
 * ```ts
 * servedVersion({ name: 'm', stop: async () => undefined }); // '1'
 * ```
 */
export function servedVersion(servable: { readonly version?: string }): string {
  return typeof servable.version === 'string' && servable.version !== '' ? servable.version : DEFAULT_VERSION;
}
