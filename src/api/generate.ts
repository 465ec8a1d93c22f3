/**
 * The generation family (`microbatch/generate`): token-by-token decoding batched per step across
 * the running sequences. Its names follow the batching family's: `GenerationHost` beside
 * `ModelHost`, `GenerationProxy` beside `Proxy`, `@generating` beside `@batching`,
 * `createGenerationHost` beside `createHost` (a class, or a worker module's path, as the first
 * argument), `asGenerating`/`Generating` beside `asBatching`/`Batching`.
 * @packageDocumentation
 * @module microbatch/generate
 */
export { GenerationHost } from '../generate/generation-host';
export type { GenerationStats } from '../generate/generation-host';
export { greedyToken } from './greedy-token';
export { TokenStream } from '../generate/token-stream';
export type { FinishReason } from '../generate/token-stream';
export type { GenerateOptions, GenerationOptions, PrefillInput, StepInput, StepOutput } from '../generate/options';
export type { GenerationObserver, SequenceEvent, SequenceOutcome, StepEvent } from '../generate/events';
export { DecoderBatcher } from '../generate/decoder-batcher';
export type { DecoderBatcherOptions, DecoderContext, DecoderState } from '../generate/decoder-batcher';
export { GenerationProxy } from './generative-proxy';
export type { GenerationProxyOptions } from './generative-proxy';
export { asGenerating, generating } from './generating';
export type { Generating, GeneratingOptions, StateOf } from './generating';
export { createGenerationHost } from './create-generation-host';
export type { CreateGenerationHostOptions, ModuleGenerationOptions } from './create-generation-host';
export type { WorkerGenerationHost, WorkerGenerationOptions } from '../generate/worker-generation';
export type { GenerationModel } from '../generate/generation.worker';
