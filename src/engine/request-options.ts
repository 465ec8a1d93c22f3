// From option-checks.ts itself, not core/options' re-export: this runs on every call given options.
import { checkMs, fail, optionKeys, rejectUnknownKeys } from '../core/option-checks';
import type { RequestOptions } from '../core/options';

const REQUEST_KEYS = optionKeys<RequestOptions>({ signal: true, timeoutMs: true, priority: true });

/**
 * Checks one call's options; returns the error to reject with, if any. Shared by every host a
 * caller talks to (the engine, the remote clients, and generation hosts, whose `generate()` knows
 * more `keys` and names itself in `where`), so one mistake reads the same everywhere.
 */
export function checkRequestOptions(name: string, options: RequestOptions, keys: readonly string[] = REQUEST_KEYS, where = `${name}.inference`): Error | undefined {
  try {
    if (typeof options !== 'object' || options === null) fail(where, 'options', `an object { ${keys.map((k) => `${k}?`).join(', ')} }`, options);
    rejectUnknownKeys(where, options, keys);
    if (options.timeoutMs !== undefined) checkMs(where, 'timeoutMs', options.timeoutMs, 'positive');
    if (options.priority !== undefined && (typeof options.priority !== 'number' || !Number.isFinite(options.priority))) {
      fail(where, 'priority', 'a finite number (larger runs first)', options.priority);
    }
    const s = options.signal;
    if (s !== undefined && (typeof s !== 'object' || s === null || typeof s.addEventListener !== 'function' || typeof s.aborted !== 'boolean')) {
      fail(where, 'signal', 'an AbortSignal', s);
    }
  } catch (e) {
    return e as Error;
  }
  return undefined;
}
