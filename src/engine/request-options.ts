import { checkMs, fail, optionKeys, rejectUnknownKeys } from '../core/options';
import type { RequestOptions } from '../core/options';

const REQUEST_KEYS = optionKeys<RequestOptions>({ signal: true, timeoutMs: true, priority: true });

/**
 * Checks one call's options; returns the error to reject with, if any. Shared by every host a
 * caller talks to (the engine and the remote clients), so one mistake reads the same everywhere.
 */
export function checkRequestOptions(name: string, options: RequestOptions): Error | undefined {
  const where = `${name}.inference`;
  try {
    if (typeof options !== 'object' || options === null) fail(where, 'options', 'an object { signal?, timeoutMs?, priority? }', options);
    rejectUnknownKeys(where, options, REQUEST_KEYS);
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
