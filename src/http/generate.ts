import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe } from '../core/describe';
import { decodeBody } from './compression';
import { badRequest, HttpError, toHttpError } from './http-error';
import { clientTimeout, parseJson } from './infer';
import type { GeneratorEntry, ResolvedLimits, ServableGenerator } from './options';
import type { RegistryKind } from './model-registry';
import { readBody } from './read-body';
import { sendJson } from './respond';

/** What the generate routes need from the server. @internal */
export interface GenerateContext {
  readonly modelName: string;
  readonly entry: GeneratorEntry;
  readonly limits: ResolvedLimits;
}

/** The `parameters` a generate request may carry, and what they become. */
const PARAMETERS = ['max_tokens', 'stop_token_ids', 'priority', 'timeout_ms'];

const isGenerator = (v: unknown): v is ServableGenerator =>
  typeof (v as ServableGenerator | null)?.generate === 'function' && typeof (v as ServableGenerator).stop === 'function';

const GENERATOR_SHAPE = 'a GenerationHost (with generate() and stop()) or { host, tokenizer? }';

/**
 * The generators of `generators`: a bare host (no tokenizer) or `{ host, tokenizer? }`, or a
 * promise of either, which loads in the background as a batching model's does.
 * @internal
 */
export const GENERATORS: RegistryKind<GeneratorEntry> = {
  accept(name, value) {
    if (isGenerator(value)) return { host: value };
    const entry = value as Partial<GeneratorEntry> | null;
    if (typeof entry !== 'object' || entry === null || !isGenerator(entry.host)) return undefined;
    const t = entry.tokenizer;
    if (t !== undefined && (typeof t !== 'object' || t === null || typeof t.encode !== 'function' || typeof t.decode !== 'function')) {
      throw new TypeError(`createInferenceServer: generator ${JSON.stringify(name)}: expected \`tokenizer\` to be { encode(text), decode(tokens) }, got ${describe(t)}`);
    }
    return entry as GeneratorEntry;
  },
  invalid: (name, value) => `createInferenceServer: generator ${JSON.stringify(name)} must be a GenerationHost (with generate() and stop()), { host, tokenizer? }, or a promise of either; got ${describe(value)}`,
  invalidResolved: (name, value) => `generator ${JSON.stringify(name)} resolved to ${describe(value)}, not ${GENERATOR_SHAPE}`,
  version: generatorVersion,
  ready: () => true,
};

/** The version a generator serves. @internal */
export function generatorVersion(entry: GeneratorEntry): string {
  const v = entry.host.version;
  return typeof v === 'string' && v !== '' ? v : '1';
}

/** Token ids and options from a generate request's JSON, or a 400 naming what is wrong. */
function readRequest(json: unknown, entry: GeneratorEntry): { id?: string; prompt: number[]; maxTokens?: number; stopTokens?: number[]; priority?: number; timeoutMs?: number } {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw badRequest('invalid_request', `a generate request is a JSON object { "input_ids" | "text_input", "parameters"? }, got ${describe(json)}`);
  const body = json as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (key !== 'input_ids' && key !== 'text_input' && key !== 'parameters' && key !== 'id') {
      throw badRequest('invalid_request', `unknown field ${JSON.stringify(key)} in a generate request; the fields are "input_ids" or "text_input", "parameters" and "id"`);
    }
  }
  if (body.id !== undefined && typeof body.id !== 'string') throw badRequest('invalid_request', `"id" must be a string, got ${describe(body.id)}`);
  let prompt: number[];
  if (body.input_ids !== undefined) {
    if (body.text_input !== undefined) throw badRequest('invalid_request', 'send "input_ids" or "text_input", not both');
    prompt = tokenIds('input_ids', body.input_ids);
  } else if (body.text_input !== undefined) {
    if (typeof body.text_input !== 'string') throw badRequest('invalid_request', `"text_input" must be a string, got ${describe(body.text_input)}`);
    if (entry.tokenizer === undefined) throw badRequest('invalid_request', 'this model has no tokenizer, so it takes "input_ids" (token ids), not "text_input"');
    prompt = entry.tokenizer.encode(body.text_input);
  } else {
    throw badRequest('invalid_request', `a generate request needs "input_ids" (token ids)${entry.tokenizer === undefined ? '' : ' or "text_input"'}`);
  }
  if (prompt.length === 0) throw badRequest('invalid_request', 'the prompt is empty: send at least one token (your model\'s begin-of-sequence token)');
  const out: ReturnType<typeof readRequest> = body.id === undefined ? { prompt } : { id: body.id as string, prompt };
  const p = body.parameters;
  if (p === undefined) return out;
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw badRequest('invalid_parameter', `"parameters" must be an object, got ${describe(p)}`);
  for (const [key, value] of Object.entries(p)) {
    if (!PARAMETERS.includes(key)) throw badRequest('invalid_parameter', `unknown parameter ${JSON.stringify(key)}; the known parameters are ${PARAMETERS.map((k) => JSON.stringify(k)).join(', ')}`);
    if (key === 'stop_token_ids') {
      out.stopTokens = tokenIds('parameters.stop_token_ids', value);
      continue;
    }
    const integer = key !== 'priority';
    if (typeof value !== 'number' || !Number.isFinite(value) || (integer && (!Number.isInteger(value) || value < 1))) {
      throw badRequest('invalid_parameter', `parameters.${key} must be ${integer ? 'an integer from 1 up' : 'a finite number'}, got ${describe(value)}`);
    }
    if (key === 'max_tokens') out.maxTokens = value;
    else if (key === 'priority') out.priority = value;
    else out.timeoutMs = value;
  }
  return out;
}

function tokenIds(field: string, value: unknown): number[] {
  if (!Array.isArray(value)) throw badRequest('invalid_request', `"${field}" must be an array of token ids, got ${describe(value)}`);
  value.forEach((t, i) => {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0) throw badRequest('invalid_request', `"${field}" must hold token ids (integers from 0 up), got ${describe(t)} at index ${i}`);
  });
  return value as number[];
}

/**
 * `POST /v2/models/{name}[/versions/{v}]/generate` and `/generate_stream` (Triton's generate
 * extension): reads the prompt and parameters, and answers the tokens, all at once as JSON or one
 * Server-Sent Event per token. A failure before the first token is an ordinary error answer
 * (status and body as for `/infer`); after it, a last event `{ "error", "code" }` ends the stream,
 * since the status was sent with the first event. A client that disconnects aborts the sequence,
 * which frees its slot at the next step.
 * @internal
 */
export async function handleGenerate(req: IncomingMessage, res: ServerResponse, ctx: GenerateContext, stream: boolean): Promise<void> {
  const body = await decodeBody(req.headers['content-encoding'], await readBody(req, ctx.limits.maxBodyBytes), ctx.limits.maxBodyBytes);
  const r = readRequest(parseJson(body), ctx.entry);
  const timeoutMs = clientTimeout(req, r.timeoutMs, ctx.limits);
  const abort = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort(new Error('the client closed the connection'));
  };
  res.once('close', onClose);
  // Triton's generate extension returns the request's `id` in every answer, as `/infer` does.
  const head = { ...(r.id === undefined ? {} : { id: r.id }), model_name: ctx.modelName, model_version: generatorVersion(ctx.entry) };
  const { tokenizer } = ctx.entry;
  const tokens = ctx.entry.host.generate(r.prompt, {
    signal: abort.signal,
    timeoutMs,
    ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
    ...(r.stopTokens === undefined ? {} : { stopTokens: r.stopTokens }),
    ...(r.priority === undefined ? {} : { priority: r.priority }),
  });
  try {
    if (!stream) {
      const ids: number[] = [];
      try {
        for await (const t of tokens) ids.push(t);
      } catch (e) {
        throw toHttpError(e, ctx.limits.retryAfterSeconds);
      }
      return sendJson(res, 200, { ...head, output_ids: ids, ...(tokenizer === undefined ? {} : { text_output: tokenizer.decode(ids) }), finish_reason: tokens.finishReason });
    }
    const it = tokens[Symbol.asyncIterator]();
    let next: IteratorResult<number>;
    try {
      next = await it.next(); // the status waits for the first token: an early failure is an ordinary error answer
    } catch (e) {
      throw toHttpError(e, ctx.limits.retryAfterSeconds);
    }
    if (res.destroyed) return;
    // `X-Accel-Buffering: no` asks a proxy in front (nginx) to pass each event on as it comes, not when its buffer fills.
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    const event = (value: unknown): void => {
      if (!res.destroyed) res.write(`data: ${JSON.stringify(value)}\n\n`);
    };
    try {
      while (next.done !== true) {
        const t = next.value;
        event({ ...head, output_ids: [t], ...(tokenizer === undefined ? {} : { text_output: tokenizer.decode([t]) }) });
        next = await it.next();
      }
      event({ ...head, output_ids: [], finish_reason: tokens.finishReason });
    } catch (e) {
      const error = toHttpError(e, ctx.limits.retryAfterSeconds);
      event({ error: error.message, code: error.code });
    }
    res.end();
  } catch (e) {
    if (e instanceof HttpError) throw e;
    throw toHttpError(e, ctx.limits.retryAfterSeconds);
  } finally {
    res.off('close', onClose);
  }
}
