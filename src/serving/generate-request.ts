import { describe } from '../core/describe';
import { invalidArgument } from './errors';
import type { Tokenizer } from './servables';

/** The `parameters` a generate request may carry, and what they become. */
const PARAMETERS = ['max_tokens', 'stop_token_ids', 'priority', 'timeout_ms'];

/** A generate request, decoded. @internal */
export interface GenerateRequest {
  /** The request's `id`, echoed in every answer. */
  id?: string;
  /** The prompt's token ids (never empty). */
  prompt: number[];
  maxTokens?: number;
  stopTokens?: number[];
  priority?: number;
  timeoutMs?: number;
}

/**
 * Token ids and options from the JSON of a generate request (Triton's generate extension:
 * `input_ids` or `text_input` with a tokenizer, `parameters`, `id`), or the `'invalid-argument'`
 * error naming what is wrong.
 * @internal
 */
export function decodeGenerateRequest(json: unknown, tokenizer: Tokenizer | undefined): GenerateRequest {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw invalidArgument('invalid_request', `a generate request is a JSON object { "input_ids" | "text_input", "parameters"? }, got ${describe(json)}`);
  const body = json as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (key !== 'input_ids' && key !== 'text_input' && key !== 'parameters' && key !== 'id') {
      throw invalidArgument('invalid_request', `unknown field ${JSON.stringify(key)} in a generate request; the fields are "input_ids" or "text_input", "parameters" and "id"`);
    }
  }
  if (body.id !== undefined && typeof body.id !== 'string') throw invalidArgument('invalid_request', `"id" must be a string, got ${describe(body.id)}`);
  let prompt: number[];
  if (body.input_ids !== undefined) {
    if (body.text_input !== undefined) throw invalidArgument('invalid_request', 'send "input_ids" or "text_input", not both');
    prompt = tokenIds('input_ids', body.input_ids);
  } else if (body.text_input !== undefined) {
    if (typeof body.text_input !== 'string') throw invalidArgument('invalid_request', `"text_input" must be a string, got ${describe(body.text_input)}`);
    if (tokenizer === undefined) throw invalidArgument('invalid_request', 'this model has no tokenizer, so it takes "input_ids" (token ids), not "text_input"');
    prompt = tokenizer.encode(body.text_input);
  } else {
    throw invalidArgument('invalid_request', `a generate request needs "input_ids" (token ids)${tokenizer === undefined ? '' : ' or "text_input"'}`);
  }
  if (prompt.length === 0) throw invalidArgument('invalid_request', 'the prompt is empty: send at least one token (your model\'s begin-of-sequence token)');
  const out: GenerateRequest = body.id === undefined ? { prompt } : { id: body.id as string, prompt };
  const p = body.parameters;
  if (p === undefined) return out;
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw invalidArgument('invalid_parameter', `"parameters" must be an object, got ${describe(p)}`);
  for (const [key, value] of Object.entries(p)) {
    if (!PARAMETERS.includes(key)) throw invalidArgument('invalid_parameter', `unknown parameter ${JSON.stringify(key)}; the known parameters are ${PARAMETERS.map((k) => JSON.stringify(k)).join(', ')}`);
    if (key === 'stop_token_ids') {
      out.stopTokens = tokenIds('parameters.stop_token_ids', value);
      continue;
    }
    const integer = key !== 'priority';
    if (typeof value !== 'number' || !Number.isFinite(value) || (integer && (!Number.isInteger(value) || value < 1))) {
      throw invalidArgument('invalid_parameter', `parameters.${key} must be ${integer ? 'an integer from 1 up' : 'a finite number'}, got ${describe(value)}`);
    }
    if (key === 'max_tokens') out.maxTokens = value;
    else if (key === 'priority') out.priority = value;
    else out.timeoutMs = value;
  }
  return out;
}

function tokenIds(field: string, value: unknown): number[] {
  if (!Array.isArray(value)) throw invalidArgument('invalid_request', `"${field}" must be an array of token ids, got ${describe(value)}`);
  value.forEach((t, i) => {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0) throw invalidArgument('invalid_request', `"${field}" must hold token ids (integers from 0 up), got ${describe(t)} at index ${i}`);
  });
  return value as number[];
}

