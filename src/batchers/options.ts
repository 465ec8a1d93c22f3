import { describe } from '../core/describe';

/** Throws a TypeError for an option that is not a non-negative integer axis. @internal */
export function checkAxis(where: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new TypeError(`${where}: expected \`${name}\` to be a non-negative integer axis, got ${describe(value)}`);
  }
  return value;
}

/** Throws a TypeError naming unknown option keys, which are almost always typos. @internal */
export function checkKeys(where: string, options: unknown, allowed: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${where}: expected an options object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${where}: unknown option ${JSON.stringify(key)}; expected one of ${allowed.join(', ')}`);
    }
  }
}

/** Throws a TypeError for an option that is set but not a boolean; returns it, `false` when unset. @internal */
export function checkBoolean(where: string, name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${where}: expected \`${name}\` to be a boolean, got ${describe(value)}`);
  return value;
}
