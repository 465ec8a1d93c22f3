import type { TensorData } from '../tensor/dtypes';
import type { TensorLike } from '../tensor/tensor-like';
import { kserveDatatype } from './datatypes';
import type { DecodedRequest } from './decode-request';
import { ServingError } from './errors';
import { jsonData } from './json-data';
import { encodeBinary } from './raw-data';

/**
 * An answer in the Open Inference Protocol's JSON form: the JSON text, and the raw bytes of the
 * outputs asked for as binary data (binary tensor extension), in output order.
 * @internal
 */
export interface EncodedResponse {
  readonly json: Buffer;
  readonly binary: readonly Buffer[];
}

/**
 * Builds the protocol's answer `{ model_name, model_version, id?, outputs: [{ name, datatype, shape, data }] }`
 * from one request's outputs. Outputs asked for as binary carry `parameters.binary_data_size`
 * instead of `data`, and their bytes are returned apart (the transport frames them after the JSON).
 * @internal
 */
export function encodeResponse(modelName: string, modelVersion: string, request: DecodedRequest, results: Record<string, TensorLike>, int64As: 'number' | 'string'): EncodedResponse {
  const wanted = request.outputs ?? Object.keys(results).map((name) => ({ name, binary: request.binaryDefault }));
  const parts: string[] = [];
  const blobs: Buffer[] = [];
  for (const { name, binary } of wanted) {
    const t = results[name];
    if (t === undefined) throw new ServingError('internal', 'model_error', `the model returned no output ${JSON.stringify(name)}; it returned ${Object.keys(results).map((k) => JSON.stringify(k)).join(', ') || 'nothing'}`);
    const datatype = kserveDatatype(t.type);
    if (datatype === undefined) throw new ServingError('internal', 'model_error', `output ${JSON.stringify(name)} has type ${t.type}, which the KServe protocol cannot carry`);
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
  return { json: Buffer.from(`{"model_name":${JSON.stringify(modelName)},"model_version":${JSON.stringify(modelVersion)},${id}"outputs":[${parts.join(',')}]}`, 'utf8'), binary: blobs };
}
