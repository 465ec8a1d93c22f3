/**
 * Releasing what a host created. Resources in the ML world use several conventions (TC39
 * `Symbol.asyncDispose` / `Symbol.dispose`, tsyringe's `dispose()`, onnxruntime's `release()`), so
 * the first one a value has is used, and only that one: calling two of them would release twice.
 * @internal
 */

type Closer = () => unknown;

/** The one method that releases `value`, bound to it, or `undefined` when it has none. @internal */
function disposerOf(value: unknown): Closer | undefined {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  const v = value as Record<string | symbol, unknown>;
  for (const key of [Symbol.asyncDispose, Symbol.dispose, 'dispose', 'release'] as const) {
    const fn = v[key];
    if (typeof fn === 'function') return () => (fn as Closer).call(value);
  }
  return undefined;
}

/**
 * Releases `values` from last to first (a later resource may use an earlier one), waiting for each
 * before the next. Every value is attempted even when one fails; then the failure is thrown (an
 * `AggregateError` when several failed). Returns the values that had a release method. @internal
 */
export async function disposeInReverse(values: readonly unknown[], where: string): Promise<unknown[]> {
  const errors: unknown[] = [];
  const released: unknown[] = [];
  for (let i = values.length - 1; i >= 0; i--) {
    const close = disposerOf(values[i]);
    if (close === undefined) continue;
    released.push(values[i]);
    try {
      await close();
    } catch (e) {
      errors.push(e);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${where}: ${errors.length} resources failed to release`);
  return released;
}
