/**
 * Loads an optional peer dependency by name. microbatch's core needs none of them; the subpaths that
 * do (`microbatch/onnx`, `microbatch/prometheus`, `microbatch/otel`) call this so that a user who
 * imports one without its package installed reads which package to install, instead of Node's bare
 * "Cannot find module".
 *
 * Only a missing *peer* is translated: an error from inside the package (one of its own imports
 * missing, a native binary failing to load) is rethrown as it is, because the install hint would
 * hide the real cause.
 *
 * @param pkg - the package to load, e.g. `'prom-client'`.
 * @param feature - what needs it, for the message, e.g. `'microbatch/prometheus'`.
 * @param load - the loader; Node's `require` (a parameter so that tests can stand in for it).
 * @internal
 */
export function requireOptionalPeer<T>(pkg: string, feature: string, load: (id: string) => unknown = require): T {
  try {
    return load(pkg) as T;
  } catch (e) {
    const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
    if (code === 'MODULE_NOT_FOUND' && String(message).startsWith(`Cannot find module '${pkg}'`)) {
      throw new Error(`${feature} needs the ${pkg} package, which is not installed. Install it next to microbatch: npm install ${pkg}`, { cause: e });
    }
    throw e;
  }
}
