/** The routes the server knows. @internal */
export type RouteName = 'server-metadata' | 'live' | 'ready' | 'metrics' | 'models' | 'model' | 'model-ready' | 'infer' | 'generate' | 'generate-stream' | 'config' | 'stats';

/** What {@link matchRoute} found. @internal */
export type RouteMatch =
  | { readonly kind: 'route'; readonly route: RouteName; readonly model: string; readonly version: string | undefined; readonly path: string }
  | { readonly kind: 'bad-method'; readonly allow: string; readonly path: string }
  | { readonly kind: 'not-found'; readonly path: string };

interface Route {
  readonly name: RouteName;
  readonly pattern: RegExp;
  readonly methods: readonly string[];
}

const GET = ['GET', 'HEAD'];
// `/v2/models/{m}` with the protocol's optional `/versions/{v}`: group 1 is the name, group 2 the version.
const MODEL = String.raw`\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?`;

// The Open Inference Protocol's paths (and Triton's config and statistics extensions) are the only spelling,
// so that what clients and docs say is what the server answers.
const ROUTES: readonly Route[] = [
  { name: 'server-metadata', pattern: /^\/v2$/, methods: GET },
  { name: 'live', pattern: /^\/v2\/health\/live$/, methods: GET },
  { name: 'ready', pattern: /^\/v2\/health\/ready$/, methods: GET },
  { name: 'metrics', pattern: /^\/metrics$/, methods: GET },
  { name: 'models', pattern: /^\/v2\/models$/, methods: GET },
  { name: 'model', pattern: new RegExp(`^${MODEL}$`), methods: GET },
  { name: 'model-ready', pattern: new RegExp(`^${MODEL}\\/ready$`), methods: GET },
  { name: 'infer', pattern: new RegExp(`^${MODEL}\\/infer$`), methods: ['POST'] },
  // Triton's generate extension.
  { name: 'generate', pattern: new RegExp(`^${MODEL}\\/generate$`), methods: ['POST'] },
  { name: 'generate-stream', pattern: new RegExp(`^${MODEL}\\/generate_stream$`), methods: ['POST'] },
  { name: 'config', pattern: new RegExp(`^${MODEL}\\/config$`), methods: GET },
  { name: 'stats', pattern: new RegExp(`^${MODEL}\\/stats$`), methods: GET },
];

function decode(part: string | undefined): string | undefined | null {
  if (part === undefined) return undefined;
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

/**
 * Matches a method and URL to a route: the route, its decoded model name and version, or the
 * methods the path allows (405), or nothing (404). Query strings are ignored; a trailing slash is
 * allowed.
 * @internal
 */
export function matchRoute(method: string, url: string): RouteMatch {
  const q = url.indexOf('?');
  let path = q >= 0 ? url.slice(0, q) : url;
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  for (const route of ROUTES) {
    const m = route.pattern.exec(path);
    if (m === null) continue;
    const model = decode(m[1]);
    const version = decode(m[2]);
    if (model === null || version === null) return { kind: 'not-found', path };
    if (!route.methods.includes(method)) return { kind: 'bad-method', allow: route.methods.join(', '), path };
    return { kind: 'route', route: route.name, model: model ?? '', version, path };
  }
  return { kind: 'not-found', path };
}
