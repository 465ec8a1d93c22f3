import type { TensorData } from '../tensor/dtypes';
import type { TensorLike } from '../tensor/tensor-like';
import { encodeBinary } from './binary';
import { kserveDatatype } from './datatypes';
import type { DecodedRequest } from './decode-request';
import { HttpError } from './http-error';
import { jsonData } from './json-data';

/** An HTTP answer body with its headers. @internal */
export interface EncodedResponse {
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** The header that says how many leading bytes of a binary body are the JSON header. */
export const HEADER_LENGTH = 'inference-header-content-length';

/**
 * Builds the protocol's answer `{ model_name, model_version, id?, outputs: [{ name, datatype, shape, data }] }`
 * from one request's outputs. Outputs asked for as binary carry `parameters.binary_data_size`
 * instead of `data`, and their bytes follow the JSON header (whose length is sent in the
 * `Inference-Header-Content-Length` header).
 * @internal
 */
export function encodeResponse(modelName: string, modelVersion: string, request: DecodedRequest, results: Record<string, TensorLike>, int64As: 'number' | 'string'): EncodedResponse {
  const wanted = request.outputs ?? Object.keys(results).map((name) => ({ name, binary: request.binaryDefault }));
  const parts: string[] = [];
  const blobs: Buffer[] = [];
  for (const { name, binary } of wanted) {
    const t = results[name];
    if (t === undefined) throw new HttpError(500, 'model_error', `the model returned no output ${JSON.stringify(name)}; it returned ${Object.keys(results).map((k) => JSON.stringify(k)).join(', ') || 'nothing'}`);
    const datatype = kserveDatatype(t.type);
    if (datatype === undefined) throw new HttpError(500, 'model_error', `output ${JSON.stringify(name)} has type ${t.type}, which the KServe protocol cannot carry`);
    const head = `{"name":${JSON.stringify(name)},"datatype":"${datatype}","shape":[${t.dims.join(',')}]`;
    if (binary) {
      const bytes = encodeBinary(datatype, t.data as TensorData);
      blobs.push(bytes);
      parts.push(`${head},"parameters":{"binary_data_size":${bytes.length}}}`);
    } else {
      parts.push(`${head},"data":${jsonData(datatype, t.data as TensorData, int64As)}}`);
    }
  }
  const id = request.id === undefined ? '' : `"id":${JSON.stringify(request.id)},`;
  const json = Buffer.from(`{"model_name":${JSON.stringify(modelName)},"model_version":${JSON.stringify(modelVersion)},${id}"outputs":[${parts.join(',')}]}`, 'utf8');
  if (blobs.length === 0) return { headers: { 'Content-Type': 'application/json' }, body: json };
  return {
    headers: { 'Content-Type': 'application/octet-stream', [HEADER_LENGTH]: String(json.length) },
    body: Buffer.concat([json, ...blobs]),
  };
}
