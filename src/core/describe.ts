/**
 * Renders a value for an error message: its kind and a short preview, so that a message can say
 * what was expected and what came.
 * @internal
 */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) {
    return `a ${value.constructor.name} of length ${(value as unknown as { length?: number }).length ?? value.byteLength}`;
  }
  switch (typeof value) {
    case 'number':
    case 'bigint':
    case 'boolean':
      return `${String(value)} (${typeof value})`;
    case 'string':
      return `${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)} (string)`;
    case 'function':
      return `a function${value.name ? ` named ${value.name}` : ''}`;
    case 'symbol':
      return `${String(value)} (symbol)`;
    default: {
      const name = (value as object).constructor?.name;
      return name && name !== 'Object' ? `an instance of ${name}` : 'an object';
    }
  }
}

/** True for Error objects, including ones made in another realm (a vm context or a worker). */
export function isError(value: unknown): value is Error {
  if (value instanceof Error) return true;
  // Called on every result of every batch: rule out primitives and non-errors before the tag check.
  if (typeof value !== 'object' || value === null || typeof (value as { message?: unknown }).message !== 'string') return false;
  return Object.prototype.toString.call(value) === '[object Error]';
}

/** Turns anything thrown into an Error, keeping the original as `cause`. */
export function toError(thrown: unknown, what: string): Error {
  if (isError(thrown)) return thrown;
  return new Error(`${what} threw a non-Error value: ${describe(thrown)}`, { cause: thrown });
}
