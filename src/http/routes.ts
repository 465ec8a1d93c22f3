/** The routes the server knows. @internal */
export type RouteName = 'healthz' | 'readyz' | 'metrics' | 'models' | 'model' | 'model-ready' | 'infer';

/** What {@link matchRoute} found. @internal */
export type RouteMatch =
  | { readonly kind: 'route'; readonly route: RouteName; readonly model: string; readonly path: string }
  | { readonly kind: 'bad-method'; readonly allow: string; readonly path: string }
  | { readonly kind: 'not-found'; readonly path: string };

interface Route {
  readonly name: RouteName;
  readonly pattern: RegExp;
  readonly methods: readonly string[];
}

const GET = ['GET', 'HEAD'];

// `/v1/...` is microbatch's own spelling; the `/v2/...` paths are KServe v2's, so that Triton and
// KServe clients work unchanged.
const ROUTES: readonly Route[] = [
  { name: 'healthz', pattern: /^\/(?:healthz|v2\/health\/live)$/, methods: GET },
  { name: 'readyz', pattern: /^\/(?:readyz|v2\/health\/ready)$/, methods: GET },
  { name: 'metrics', pattern: /^\/metrics$/, methods: GET },
  { name: 'models', pattern: /^\/v[12]\/models$/, methods: GET },
  { name: 'model', pattern: /^\/v[12]\/models\/([^/]+)$/, methods: GET },
  { name: 'model-ready', pattern: /^\/v[12]\/models\/([^/]+)\/ready$/, methods: GET },
  { name: 'infer', pattern: /^\/v[12]\/models\/([^/]+)\/infer$/, methods: ['POST'] },
];

/**
 * Matches a method and URL to a route: the route and its decoded `:name`, or the methods the path
 * allows (405), or nothing (404). Query strings are ignored; a trailing slash is allowed.
 * @internal
 */
export function matchRoute(method: string, url: string): RouteMatch {
  const q = url.indexOf('?');
  let path = q >= 0 ? url.slice(0, q) : url;
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  for (const route of ROUTES) {
    const m = route.pattern.exec(path);
    if (m === null) continue;
    let model = '';
    if (m[1] !== undefined) {
      try {
        model = decodeURIComponent(m[1]);
      } catch {
        return { kind: 'not-found', path };
      }
    }
    if (!route.methods.includes(method)) return { kind: 'bad-method', allow: route.methods.join(', '), path };
    return { kind: 'route', route: route.name, model, path };
  }
  return { kind: 'not-found', path };
}
