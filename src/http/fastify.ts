import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MountOptions } from './express';
import type { InferenceServer } from './server';

/** The part of a Fastify request the plugin uses. */
export interface FastifyRequestLike {
  readonly raw: IncomingMessage;
}

/** The part of a Fastify reply the plugin uses. */
export interface FastifyReplyLike {
  readonly raw: ServerResponse;
  hijack(): unknown;
}

/**
 * The part of a Fastify instance the plugin uses (typed here so that `microbatch/http` needs no
 * Fastify at run time; a real `FastifyInstance` is one).
 */
export interface FastifyInstanceLike {
  readonly prefix: string;
  removeAllContentTypeParsers(): void;
  addContentTypeParser(type: string, parser: (request: never, payload: never, done: (error: Error | null, body?: unknown) => void) => void): void;
  all(path: string, handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => void): unknown;
}

/**
 * A Fastify plugin that serves an inference server's routes (`/v2`, `/v2/...`, `/metrics`) in a
 * Fastify app: each request is handed, unparsed, to the server, which answers exactly as when
 * standalone (limits, 503 + `Retry-After` when the queue is full, draining on `close()`). Inside
 * the plugin's own scope Fastify's body parsers are replaced by a pass-through, so the server
 * reads the body itself with its own `maxBodyBytes`; the app's other routes keep theirs. A
 * `prefix` given to `register` prefixes the routes.
 *
 * The server's `close({ drain })` still drains (new inference requests 503 `shutting_down`, in
 * flight ones answered, models stopped); call it from Fastify's `onClose` hook, or before
 * `app.close()`.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { createInferenceServer, fastifyPlugin } from 'microbatch/http';
 *
 * const inference = createInferenceServer({ models: { classifier: host } });
 * const app = Fastify();
 * await app.register(fastifyPlugin(inference));
 * app.addHook('onClose', () => inference.close());
 * await app.listen({ port: 8080 });
 * ```
 */
export function fastifyPlugin(server: InferenceServer, options: MountOptions = {}): (instance: FastifyInstanceLike) => Promise<void> {
  return async (instance) => {
    instance.removeAllContentTypeParsers();
    // Leaves the body stream unread: the server reads it (and bounds it) as the standalone one does.
    instance.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const prefix = instance.prefix;
    const handler = (request: FastifyRequestLike, reply: FastifyReplyLike): void => {
      reply.hijack();
      const req = request.raw;
      // The server's routes are relative to where the plugin is mounted.
      if (prefix !== '' && req.url?.startsWith(prefix) === true) req.url = req.url.slice(prefix.length) || '/';
      server.handle(req, reply.raw);
    };
    instance.all('/v2', handler);
    instance.all('/v2/*', handler);
    if (options.metrics !== false) instance.all('/metrics', handler);
  };
}
