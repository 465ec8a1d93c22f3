import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe } from '../core/describe';
import { invalidArgument, ServingError, type RepositoryControl, type ResolvedLimits } from '../serving';
import { decodeBody } from './compression';
import { HttpError } from './http-error';
import { parseJson } from './infer';
import { readBody } from './read-body';
import { sendJson } from './respond';

/**
 * Triton's model repository extension: `POST /v2/repository/index`, `POST
 * /v2/repository/models/{name}/load` and `.../unload`. Group 1 is the optional repository name
 * (`/v2/repository/{repo}/...`, which Triton answers 501 for a non-empty one), group 2 the model,
 * group 3 the action.
 */
const REPOSITORY = /^\/v2\/repository(?:\/([^/]+))?(?:\/index|\/models\/([^/]+)\/(load|unload))$/;

/** Whether `path` (without its query) is a repository route; `server.ts` hands those here. @internal */
export function isRepositoryPath(path: string): boolean {
  return path.startsWith('/v2/repository/') && REPOSITORY.test(path.replace(/\/$/, ''));
}

/** A request body that may be empty: `{}` then. */
async function readOptionalJson(req: IncomingMessage, limits: ResolvedLimits): Promise<Record<string, unknown>> {
  const body = await decodeBody(req.headers['content-encoding'], await readBody(req, limits.maxBodyBytes), limits.maxBodyBytes);
  if (body.length === 0 || body.toString('utf8').trim() === '') return {};
  const value = parseJson(body);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidArgument('invalid_body', `expected the request body to be a JSON object, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

/**
 * Answers a repository route: the index as a JSON array, an empty `{}` for a load or unload that
 * succeeded, or the error (404 for a model the repository does not hold, 503 outside explicit
 * mode, 400 for a load that failed, 501 for a named repository or a server without one).
 * @internal
 */
export async function handleRepositoryRoute(req: IncomingMessage, res: ServerResponse, path: string, repository: RepositoryControl | undefined, limits: ResolvedLimits): Promise<void> {
  const clean = path.replace(/\/$/, '');
  const m = REPOSITORY.exec(clean) as RegExpExecArray;
  if (req.method !== 'POST') throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${clean}; use POST`, { Allow: 'POST' });
  if (m[1] !== undefined && m[1] !== '') {
    throw new ServingError('unimplemented', 'named_repository', `this server has one model repository; leave the repository name (${JSON.stringify(m[1])}) out of the path: POST /v2/repository/index`);
  }
  if (repository === undefined) {
    throw new ServingError('unimplemented', 'no_repository', 'this server serves no model repository: start it with `microbatch serve <dir>` (a Triton model repository) to load and unload models');
  }
  const body = await readOptionalJson(req, limits);
  if (m[2] === undefined) {
    const ready = body.ready;
    if (ready !== undefined && typeof ready !== 'boolean') throw invalidArgument('invalid_body', `expected "ready" to be true or false, got ${describe(ready)}`);
    return sendJson(res, 200, repository.index(ready === true ? { ready } : {}));
  }
  let name: string;
  try {
    name = decodeURIComponent(m[2]);
  } catch {
    throw new HttpError(404, 'not_found', `no route for ${req.method} ${clean}`);
  }
  const parameters = body.parameters ?? {};
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) throw invalidArgument('invalid_body', `expected "parameters" to be an object, got ${describe(parameters)}`);
  // unload_dependents is Triton's (for ensembles); a repository of ONNX models has no dependents.
  // A load's `config` is a config in Triton's JSON form, for this load; `file:` contents are not taken.
  const known = m[3] === 'unload' ? ['unload_dependents'] : ['config'];
  const unknown = Object.keys(parameters).filter((k) => !known.includes(k));
  if (unknown.length > 0) {
    throw invalidArgument('unsupported_parameter', `${m[3]} takes only ${known.map((k) => `"${k}"`).join(', ')} as parameters; got ${unknown.map((k) => `"${k}"`).join(', ')}`);
  }
  const config = (parameters as { config?: unknown }).config;
  if (config !== undefined && typeof config !== 'string') throw invalidArgument('invalid_body', `expected parameters.config to be a string holding the config as JSON, got ${describe(config)}`);
  await (m[3] === 'load' ? repository.load(name, config === undefined ? {} : { config }) : repository.unload(name));
  return sendJson(res, 200, {});
}
