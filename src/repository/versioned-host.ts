import type { InferenceServable, RepositoryVersionInfo } from '../serving';

/**
 * `host` as version `version` of a repository model: the same host (every property and method
 * reaches it), except that its `version` is the repository's version number, which answers and
 * statistics report, and its `repository` tells the metadata and config answers what the host
 * cannot (the other versions served, the config in force). A `Proxy`, because a `ModelHost` keeps its state in private fields that
 * only the host itself may be `this` for: methods are bound to the host once, on first use, so
 * the request path allocates nothing new.
 *
 * @example
 * ```ts
 * const v2 = versionedHost(await createOnnxHost('2/model.onnx', { maxBatchSize: 8 }), '2');
 * v2.version; // '2'
 * ```
 */
export function versionedHost(host: InferenceServable, version: string, repository?: RepositoryVersionInfo): InferenceServable {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(host, {
    get(target, key) {
      if (key === 'version') return version;
      if (key === 'repository') return repository;
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      let fn = bound.get(key);
      if (fn === undefined) {
        fn = (value as (...args: unknown[]) => unknown).bind(target);
        bound.set(key, fn);
      }
      return fn;
    },
  });
}
