import type * as PromClient from 'prom-client';

/**
 * The `registry` option of the Prometheus adapters: a prom-client Registry, never defaulted to the
 * global one behind the caller's back. Kept apart from `common.ts`, which the
 * package root's types reach: a user without prom-client must still type-check. @internal
 */
export function checkRegistry(where: string, registry: unknown): PromClient.Registry {
  if (typeof registry !== 'object' || registry === null || typeof (registry as PromClient.Registry).registerMetric !== 'function') {
    throw new TypeError(`${where}: expected \`registry\` to be a prom-client Registry (pass \`register\` to use the global one)`);
  }
  return registry as PromClient.Registry;
}
