import type * as Grpc from '@grpc/grpc-js';
import { decodeGenerateRequest, encodeBinary, ownTimeout, requestTimeout, servedVersion, shuttingDown, type KServeDatatype } from '../serving';
import type { TensorData } from '../tensor/dtypes';
import { msLeft, versionOf, type GrpcCalls } from './calls';
import { tensorContents } from './contents';
import { inputValues, plainParameters, rawEntries } from './infer-codec';
import { releaseReadBuffers } from './release-reads';
import type { InferOutputTensor, ModelInferRequest, ModelInferResponse, ModelStreamInferResponse } from './messages';

type StreamCall = Grpc.ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>;

/** An open stream, as the server's close sees it: ended at once when idle, else after its last answer. @internal */
export interface OpenStream {
  endIfIdle(): void;
}

const FINAL = 'triton_final_response';

/** One output of a token answer: ids as INT64, text as BYTES; raw or typed as the request came. */
function output(name: string, datatype: KServeDatatype, data: TensorData, raw: boolean): { tensor: InferOutputTensor; bytes?: Buffer } {
  const tensor: InferOutputTensor = { name, datatype, shape: [data.length] };
  if (raw) return { tensor, bytes: encodeBinary(datatype, data) };
  return { tensor: { ...tensor, contents: tensorContents(datatype, data) } };
}

/**
 * The generation body the serving core's decoder reads (Triton's generate extension), from a
 * streamed `ModelInferRequest`: inputs `input_ids` (token ids) or `text_input` (with a tokenizer),
 * optional `stop_token_ids`, and `parameters` (`max_tokens`, `priority`, `timeout_ms`).
 */
function generateBody(msg: ModelInferRequest): Record<string, unknown> {
  const raw = rawEntries(msg);
  const parameters = plainParameters(msg.parameters);
  const body: Record<string, unknown> = msg.id === undefined || msg.id === '' ? {} : { id: msg.id };
  (msg.inputs ?? []).forEach((t, i) => {
    const values = inputValues(t, raw[i]);
    if (t.name === 'stop_token_ids') parameters.stop_token_ids = values;
    else if (t.name === 'text_input') body.text_input = values.length === 1 ? values[0] : values;
    else body[t.name ?? ''] = values; // input_ids; any other name is refused by the decoder, by name
  });
  if (Object.keys(parameters).length > 0) body.parameters = parameters;
  return body;
}

/**
 * `ModelStreamInfer` (Triton's decoupled streaming): each request on the stream is answered on
 * it. A generator answers one response per token (`output_ids`, and `text_output` with a
 * tokenizer), then a last one with no outputs, `triton_final_response: true` and `finish_reason`;
 * a batching model answers one response per request, in request order. A failing request answers
 * `error_message` (the REST message) and the stream stays open. Cancelling the call aborts every
 * request still running on it.
 * @internal
 */
export function handleStream(calls: GrpcCalls, call: StreamCall, open: Set<OpenStream>): void {
  const abort = new AbortController();
  let pending = 0;
  let clientDone = false;
  let finished = false;
  let order: Promise<void> = Promise.resolve();
  const finish = (): void => {
    if (finished) return;
    finished = true;
    open.delete(state);
    call.end();
  };
  const state: OpenStream = {
    endIfIdle: () => {
      if (pending === 0) finish();
    },
  };
  open.add(state);
  const write = (message: ModelStreamInferResponse): void => {
    if (!finished && !call.cancelled) call.write(message);
  };
  const failed = (msg: ModelInferRequest, e: unknown): void => {
    const f = calls.fail('ModelStreamInfer', msg.model_name ?? '', e);
    write({ error_message: f.details, infer_response: { model_name: msg.model_name ?? '', model_version: msg.model_version ?? '', id: msg.id ?? '', parameters: {}, outputs: [], raw_output_contents: [] } });
  };
  const settle = (): void => {
    pending--;
    if (pending === 0 && (clientDone || calls.closing)) finish();
  };

  call.on('data', (msg: ModelInferRequest) => {
    releaseReadBuffers(call);
    pending++;
    const deadlineMs = msLeft(call.getDeadline());
    if (calls.core.registry.kindOf(msg.model_name ?? '') === 'generator') {
      generate(calls, msg, deadlineMs, abort.signal, write)
        .catch((e: unknown) => failed(msg, e))
        .finally(settle);
      return;
    }
    // A batching model's requests run concurrently (and batch together), and are answered in order.
    const answer = calls.infer(msg, deadlineMs, abort.signal);
    answer.catch(() => undefined); // handled in order below
    order = order
      .then(() => answer)
      .then(
        (response) => write({ error_message: '', infer_response: response }),
        (e: unknown) => failed(msg, e),
      )
      .finally(settle);
  });
  call.on('end', () => {
    clientDone = true;
    if (pending === 0) finish();
  });
  call.on('cancelled', () => {
    finished = true;
    open.delete(state);
    abort.abort(new Error('the client cancelled the stream'));
  });
  call.on('error', () => undefined); // a broken stream is a cancelled one; nothing to answer
}

async function generate(calls: GrpcCalls, msg: ModelInferRequest, deadlineMs: number | undefined, signal: AbortSignal, write: (m: ModelStreamInferResponse) => void): Promise<void> {
  if (calls.closing) throw shuttingDown();
  const name = msg.model_name ?? '';
  const { host, tokenizer } = calls.core.generator(name, versionOf(msg.model_version));
  calls.core.enter();
  try {
    const raw = (msg.raw_input_contents ?? []).length > 0;
    const r = decodeGenerateRequest(generateBody(msg), tokenizer);
    const asked = r.timeoutMs === undefined ? deadlineMs : deadlineMs === undefined ? r.timeoutMs : Math.min(r.timeoutMs, deadlineMs);
    const timeoutMs = requestTimeout(asked, calls.core.limits, ownTimeout(host));
    const tokens = host.generate(r.prompt, {
      signal,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
      ...(r.stopTokens === undefined ? {} : { stopTokens: r.stopTokens }),
      ...(r.priority === undefined ? {} : { priority: r.priority }),
    });
    const head = { model_name: name, model_version: servedVersion(host), id: r.id ?? '' };
    const answer = (outs: Array<{ tensor: InferOutputTensor; bytes?: Buffer }>, parameters: ModelInferResponse['parameters']): ModelStreamInferResponse => ({
      error_message: '',
      infer_response: { ...head, parameters, outputs: outs.map((o) => o.tensor), raw_output_contents: raw ? outs.map((o) => o.bytes as Buffer) : [] },
    });
    for await (const t of tokens) {
      const outs = [output('output_ids', 'INT64', BigInt64Array.of(BigInt(t)), raw)];
      if (tokenizer !== undefined) outs.push(output('text_output', 'BYTES', [tokenizer.decode([t])], raw));
      write(answer(outs, { [FINAL]: { parameter_choice: 'bool_param', bool_param: false } }));
    }
    write(answer([], { [FINAL]: { parameter_choice: 'bool_param', bool_param: true }, finish_reason: { parameter_choice: 'string_param', string_param: tokens.finishReason ?? '' } }));
  } finally {
    calls.core.leave();
  }
}
