import { describe } from './describe';

// The checks every entry point's option validation is made of: one wording for one mistake.

/**
 * The keys of an options type as a list for the unknown-key checks, written as a map with one
 * entry per key so that the compiler fails when the type gains or loses a key. Map order is the
 * order error messages list them in. @internal
 */
export function optionKeys<T>(keys: { readonly [K in keyof T]-?: true }): readonly string[] {
  return Object.keys(keys);
}

/** @internal */
export function fail(where: string, key: string, expected: string, got: unknown, Err = TypeError): never {
  throw new Err(`${where}: expected \`${key}\` to be ${expected}, got ${describe(got)}`);
}

/** An integer from 1 and up (or Infinity when allowed): TypeError for a non-number, RangeError otherwise. @internal */
export function positiveInteger(where: string, key: string, value: unknown, allowInfinity = false): number {
  if (typeof value !== 'number') fail(where, key, 'an integer from 1 and up', value);
  if (allowInfinity && value === Infinity) return value;
  if (!Number.isInteger(value) || value < 1) {
    fail(where, key, `an integer from 1 and up${allowInfinity ? ' (or Infinity)' : ''}`, value, RangeError);
  }
  return value;
}

/** @internal */
export function checkMs(where: string, key: string, value: unknown, min: 'zero' | 'positive'): number {
  const expected = min === 'zero' ? 'a number of milliseconds >= 0' : 'a number of milliseconds > 0 (or Infinity)';
  if (typeof value !== 'number' || Number.isNaN(value)) fail(where, key, expected, value);
  if (min === 'zero' ? value < 0 || value === Infinity : value <= 0) fail(where, key, expected, value, RangeError);
  return value;
}

/** Rejects keys a host does not know, naming the known ones (catches `maxBatchsize` typos). @internal */
export function rejectUnknownKeys(where: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(`${where}: unknown option \`${key}\`; the known options are ${known.map((k) => `\`${k}\``).join(', ')}`);
    }
  }
}

/** A copy without the keys whose value is `undefined` (so they do not override defaults). @internal */
export function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
