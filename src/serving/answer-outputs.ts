import type { TensorLike } from '../tensor/tensor-like';
import { kserveDatatype, type KServeDatatype } from './datatypes';
import type { DecodedRequest } from './decode-request';
import { ServingError } from './errors';

/** One output an answer carries: its tensor, its protocol datatype, and whether it goes as raw bytes. @internal */
export interface AnswerOutput {
  readonly name: string;
  readonly binary: boolean;
  readonly datatype: KServeDatatype;
  readonly tensor: TensorLike;
}

/**
 * The outputs one request is answered with, in order: those it asked for, else every output the
 * model returned (each in the form `binaryDefault` says). Every transport encodes these, so that a
 * missing output or a type the protocol cannot carry fails the same way over each: `'internal'`
 * `model_error`, naming the output.
 * @internal
 */
export function answerOutputs(request: DecodedRequest, results: Record<string, TensorLike>): AnswerOutput[] {
  const wanted = request.outputs ?? Object.keys(results).map((name) => ({ name, binary: request.binaryDefault }));
  return wanted.map(({ name, binary }) => {
    const tensor = results[name];
    if (tensor === undefined) throw new ServingError('internal', 'model_error', `the model returned no output ${JSON.stringify(name)}; it returned ${Object.keys(results).map((k) => JSON.stringify(k)).join(', ') || 'nothing'}`);
    const datatype = kserveDatatype(tensor.type);
    if (datatype === undefined) throw new ServingError('internal', 'model_error', `output ${JSON.stringify(name)} has type ${tensor.type}, which the KServe protocol cannot carry`);
    return { name, binary, datatype, tensor };
  });
}
