import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeGenerateRequest, ownTimeout, servedVersion, type GenerativeServable, type ResolvedLimits, type Tokenizer } from '../serving';
import { decodeBody } from './compression';
import { HttpError, toHttpError } from './http-error';
import { clientTimeout, parseJson } from './infer';
import { readBody } from './read-body';
import { sendJson } from './respond';

/** What the generate routes need from the server. @internal */
export interface GenerateContext {
  readonly modelName: string;
  readonly host: GenerativeServable;
  readonly tokenizer: Tokenizer | undefined;
  readonly limits: ResolvedLimits;
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
  const r = decodeGenerateRequest(parseJson(body), ctx.tokenizer);
  const timeoutMs = clientTimeout(req, r.timeoutMs, ctx.limits, ownTimeout(ctx.host));
  const abort = new AbortController();
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort(new Error('the client closed the connection'));
  };
  res.once('close', onClose);
  // Triton's generate extension returns the request's `id` in every answer, as `/infer` does.
  const head = { ...(r.id === undefined ? {} : { id: r.id }), model_name: ctx.modelName, model_version: servedVersion(ctx.host) };
  const { tokenizer } = ctx;
  const tokens = ctx.host.generate(r.prompt, {
    signal: abort.signal,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
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
