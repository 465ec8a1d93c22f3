/**
 * What greedy decoding of one prompt alone gives on the generated decoders' JS references: the
 * tokens every test of continuous batching compares its callers' tokens with.
 */
import { greedy, kvDecoderReference, recurrentDecoderReference } from '../../examples/support/decoder-models';

/** Greedy decoding of one prompt alone through a reference step (token in, logits out), `maxTokens` tokens. */
export function decodeAlone(prompt: readonly number[], maxTokens: number, step: (token: number) => Float32Array): number[] {
  let logits: Float32Array = new Float32Array();
  for (const t of prompt) logits = step(t);
  const out: number[] = [];
  for (let i = 0; i < maxTokens; i++) {
    out.push(greedy(logits));
    logits = step(out[i] as number);
  }
  return out;
}

/** {@link decodeAlone} on the recurrent decoder (default options). */
export function recurrentAlone(prompt: readonly number[], maxTokens: number, hidden = 8): number[] {
  const reference = recurrentDecoderReference();
  let state: Float32Array = new Float32Array(hidden);
  return decodeAlone(prompt, maxTokens, (t) => {
    const r = reference.step(t, state);
    state = r.state;
    return r.logits;
  });
}

/** {@link decodeAlone} on the key/value-cache decoder (default options). */
export function kvAlone(prompt: readonly number[], maxTokens: number): number[] {
  const reference = kvDecoderReference();
  const keys: Float32Array[] = [];
  const values: Float32Array[] = [];
  return decodeAlone(prompt, maxTokens, (t) => {
    const r = reference.step(t, keys, values);
    keys.push(r.key);
    values.push(r.value);
    return r.logits;
  });
}
