/**
 * Type-level helpers that read a host's types off the signature of a batch method, so that
 * `createHost(Classifier).inference(x)` and `asBatching(model).inference(x)` are typed without
 * type arguments. Two shapes are recognised:
 *
 * - list style (the default `ListBatcher`): `(items: readonly In[]) => Promise<ReadonlyArray<Out | Error>>`
 *   gives `In` and `Out`;
 * - merged style (a batcher whose item and batch types agree, such as concatenated tensors):
 *   `(batch: T) => Promise<R>` gives `In = T` and `Out = R`.
 *
 * With any other batcher, pass it to `createHost` (its types then win) or annotate the host.
 */

/* eslint-disable @typescript-eslint/no-explicit-any -- function-type patterns match any parameters */

/** Any method that takes a batch. */
export type BatchMethod = (batch: any) => unknown;

/**
 * Keys of `T` whose value is a method that can take a batch (the candidates for `method`).
 *
 * @example
 * ```ts
 * type K = BatchMethodKey<Classifier>; // 'predictBatch' | 'embedBatch' | ...
 * ```
 */
export type BatchMethodKey<T> = { [K in keyof T]-?: T[K] extends BatchMethod ? K : never }[keyof T];

/**
 * The method `inference()` maps to when none is named: `predictBatch` when `T` has it. Without it
 * the types fall back to `unknown` (name the method to get precise types).
 *
 * @example
 * ```ts
 * type M = DefaultBatchMethod<Classifier>; // 'predictBatch'
 * ```
 */
export type DefaultBatchMethod<T> = 'predictBatch' extends BatchMethodKey<T> ? 'predictBatch' : never;

/** The method `M` of `T`, or `undefined` when `M` names none. */
export type MethodOf<T, M> = [M] extends [never] ? undefined : M extends keyof T ? T[M] : undefined;

/**
 * One request's input for batch method `F`.
 *
 * @example
 * ```ts
 * type In = BatchItem<(xs: readonly string[]) => Promise<number[]>>; // string
 * ```
 */
export type BatchItem<F> = F extends (batch: infer B, ...rest: any[]) => unknown ? ([B] extends [readonly (infer I)[]] ? I : B) : unknown;

/**
 * One request's result for batch method `F` (`Error` entries of a list result are rejections, so
 * they are removed).
 *
 * @example
 * ```ts
 * type Out = BatchResult<(xs: readonly string[]) => Promise<Array<number | Error>>>; // number
 * ```
 */
export type BatchResult<F> = F extends (batch: infer B, ...rest: any[]) => infer R
  ? [B] extends [readonly unknown[]]
    ? Awaited<R> extends readonly (infer O)[]
      ? Exclude<O, Error>
      : Awaited<R>
    : Awaited<R>
  : unknown;

/** What batch method `F` receives. */
export type BatchInput<F> = F extends (batch: infer B, ...rest: any[]) => unknown ? B : unknown;

/** What batch method `F` returns, awaited. */
export type BatchOutput<F> = F extends (...args: any[]) => infer R ? Awaited<R> : unknown;

/** Item type of method `M` of `T`. */
export type ItemOf<T, M> = BatchItem<MethodOf<T, M>>;
/** Result type of method `M` of `T`. */
export type ResultOf<T, M> = BatchResult<MethodOf<T, M>>;
/** Batch type of method `M` of `T`. */
export type BatchOf<T, M> = BatchInput<MethodOf<T, M>>;
/** Batch output type of method `M` of `T`. */
export type BatchOutOf<T, M> = BatchOutput<MethodOf<T, M>>;
