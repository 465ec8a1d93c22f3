import type { TensorData } from '../tensor/dtypes';
import type { TensorLike } from '../tensor/tensor-like';
import { answerOutputs } from './answer-outputs';
import type { DecodedRequest } from './decode-request';
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
  const parts: string[] = [];
  const blobs: Buffer[] = [];
  for (const { name, binary, datatype, tensor: t } of answerOutputs(request, results)) {
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
