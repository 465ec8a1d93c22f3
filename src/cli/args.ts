import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * A mistake on the command line: an unknown flag, a bad value, a missing argument. The CLI prints
 * the message and the command's usage line, and exits with code 2 (as most Unix tools do).
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The options map `parseArgs` takes. @internal */
export type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Parses `argv` strictly (unknown flags and missing values are {@link UsageError}s, not Node's
 * parse errors) and returns the flags and positionals.
 * @internal
 */
export function parse(command: string, argv: readonly string[], options: Options): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | string[] | undefined>, positionals };
  } catch (e) {
    // Node's messages are good ("Unknown option '--prot'"), but mention the command and --help.
    const message = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(`${command}: ${message}`);
  }
}

/**
 * Reads a numeric flag: `undefined` when absent, else a number within `[min, max]` (an integer when
 * `integer`), or a {@link UsageError} that names the flag and the value.
 * @internal
 */
export function numberFlag(command: string, values: Record<string, unknown>, name: string, rule: { min: number; max?: number; integer?: boolean }): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  const max = rule.max ?? Infinity;
  const kind = rule.integer === true ? 'an integer' : 'a number';
  if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(n) || (rule.integer === true && !Number.isInteger(n)) || n < rule.min || n > max) {
    throw new UsageError(`${command}: --${name} must be ${kind} from ${rule.min}${max === Infinity ? ' up' : ` to ${max}`}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** Exactly one positional (the model path), or a {@link UsageError}. @internal */
export function onePositional(command: string, positionals: readonly string[], what: string): string {
  if (positionals.length === 0) throw new UsageError(`${command}: missing ${what}`);
  if (positionals.length > 1) throw new UsageError(`${command}: expected one ${what}, got ${positionals.length}: ${positionals.join(' ')}`);
  return positionals[0] as string;
}
