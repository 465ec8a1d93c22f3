import { describe } from '../core/describe';
import { resolveOptions } from '../core/options';
import { type BatchMethod } from './batch-method-types';
import { DEFAULT_BATCH_METHOD, nameOf, recordBatching, type BatchingOptions } from './batching-metadata';
import { installGeneratedMembers } from './generated-inference';

/**
 * What `@batching(...)` returns: a legacy (`experimentalDecorators`) decorator for a batch method,
 * or for a class (then it decorates the class's `predictBatch`). Fields, accessors and static
 * methods are refused: at compile time where TypeScript can tell, otherwise when the class is defined.
 *
 * @example
 * ```ts
 * const decorate: BatchingDecorator = batching(32);
 * ```
 */
export interface BatchingDecorator {
  /** Class form: the same as decorating the class's `predictBatch` method. */
  (target: abstract new (...args: never[]) => unknown): void;
  /** Method form: any method that takes the batch as its first argument. */
  <F extends BatchMethod>(target: object, method: string | symbol, descriptor: TypedPropertyDescriptor<F>): void;
}

/**
 * Marks a model class's batch method (normally `predictBatch`): it receives a whole batch and
 * returns one result (or `Error`, which rejects only that caller) per item, in order, or with a
 * `batcher`, whatever that batcher merges and splits. The options are stored on the class
 * (reflect-metadata, key `'microbatch:batching'`; read them with {@link getBatchingMetadata}) and
 * used by {@link createHost} and by the generated `inference()` of every instance.
 *
 * `@batching(n)` is short for `@batching({ maxBatchSize: n })`. The options are checked when the
 * class is defined. `@batching(...)` on the class itself decorates its `predictBatch`, exactly as
 * the method form does. Precedence: defaults < these options < `createHost` overrides <
 * `host.configure()`.
 *
 * Requires TypeScript's `experimentalDecorators` (as tsyringe does) and `import 'reflect-metadata'`
 * before the first decorated class (the `microbatch` entry point does it for you).
 *
 * @param options - host options (see {@link HostOptions}), or the `maxBatchSize` alone.
 *
 * @example
 * ```ts
 * @injectable()
 * class Classifier {
 *   constructor(@inject(OnnxSession) private readonly session: InferenceSession) {}
 *
 *   @batching({ maxBatchSize: 32, maxDelayMs: 2 })
 *   async predictBatch(rows: readonly Float32Array[]): Promise<Float32Array[]> {
 *     // one session.run for the whole batch, then one output row per input row
 *   }
 * }
 * ```
 */
export function batching(options: number | BatchingOptions): BatchingDecorator {
  if (arguments.length !== 1 || typeof options === 'function') {
    throw new TypeError(
      '@batching needs its options: write @batching(32) or @batching({ maxBatchSize: 32, ... }), with the parentheses',
    );
  }
  if (typeof options !== 'number' && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`@batching: expected a maxBatchSize (a number) or an options object, got ${describe(options)}`);
  }
  const stored = Object.freeze(typeof options === 'number' ? { maxBatchSize: options } : { ...options });
  return function decorate(target: object, method?: string | symbol, descriptor?: PropertyDescriptor): void {
    if (typeof method === 'object' && method !== null && 'kind' in method) {
      // A TC39 standard decorator call passes a context object here. The DI side (tsyringe's
      // parameter decorators and design:paramtypes) only exists with legacy decorators.
      throw new TypeError(
        '@batching was applied as a TC39 standard decorator; microbatch (like tsyringe) needs ' +
          '"experimentalDecorators": true and "emitDecoratorMetadata": true in tsconfig.json',
      );
    }
    let ctor: object;
    let name: string | symbol;
    if (method === undefined) {
      if (typeof target !== 'function') throw new TypeError(`@batching: expected a class or a method, got ${describe(target)}`);
      ctor = target;
      name = DEFAULT_BATCH_METHOD;
      if (typeof (target.prototype as Record<string, unknown> | undefined)?.[DEFAULT_BATCH_METHOD] !== 'function') {
        throw new TypeError(
          `@batching on class ${nameOf(target)}: the class form decorates predictBatch, and ${nameOf(target)} has no ` +
            'predictBatch method; add one, or put @batching(...) on the batch method itself',
        );
      }
    } else {
      const at = `@batching on ${nameOf(typeof target === 'function' ? target : target.constructor)}.${String(method)}`;
      if (typeof target === 'function') {
        throw new TypeError(`${at}: it is a static method; @batching decorates an instance method (the model's batch method)`);
      }
      if (descriptor === undefined) {
        throw new TypeError(`${at}: it is a field; @batching decorates a method: write \`async ${String(method)}(batch) { ... }\``);
      }
      if (descriptor.get !== undefined || descriptor.set !== undefined) {
        throw new TypeError(`${at}: it is an accessor (get/set); @batching decorates a method that takes the batch`);
      }
      if (typeof descriptor.value !== 'function') {
        throw new TypeError(`${at}: expected a method, got ${describe(descriptor.value)}`);
      }
      ctor = target.constructor;
      name = method;
    }
    const where = `@batching on ${nameOf(ctor)}.${String(name)}`;
    // Checked now, so a bad option fails when the class is defined, not at the first request.
    resolveOptions(where, stored);
    recordBatching(ctor, name, stored, where);
    installGeneratedMembers((ctor as { prototype: object }).prototype);
  } as BatchingDecorator;
}
