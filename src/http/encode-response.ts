import type { TensorLike } from '../tensor/tensor-like';
import { encodeResponse as encodeAnswer, type DecodedRequest } from '../serving';

/** An HTTP answer body with its headers. @internal */
export interface EncodedResponse {
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** The header that says how many leading bytes of a binary body are the JSON header. */
export const HEADER_LENGTH = 'inference-header-content-length';

/**
 * Frames the protocol's answer for HTTP: JSON alone, or (when outputs are asked for as binary)
 * the JSON header followed by their bytes, with the header's length in the
 * `Inference-Header-Content-Length` header (the binary tensor extension).
 * @internal
 */
export function encodeResponse(modelName: string, modelVersion: string, request: DecodedRequest, results: Record<string, TensorLike>, int64As: 'number' | 'string'): EncodedResponse {
  const { json, binary } = encodeAnswer(modelName, modelVersion, request, results, int64As);
  if (binary.length === 0) return { headers: { 'Content-Type': 'application/json' }, body: json };
  return {
    headers: { 'Content-Type': 'application/octet-stream', [HEADER_LENGTH]: String(json.length) },
    body: Buffer.concat([json, ...binary]),
  };
}
