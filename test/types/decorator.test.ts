/**
 * Type-level tests of the decorator style, checked by `tsc` (run before jest in `npm test`). The
 * checks live in functions that are compiled but never called (they would load models and leave
 * promises behind); the runtime assertion only makes jest count the file.
 */
import 'reflect-metadata';
import { expectTypeOf } from 'expect-type';
import { inject, injectable } from 'tsyringe';
import { batching } from '../../src/api/batching';
import { createHost, type HostedModel } from '../../src/api/create-host';
import { asBatching, type Batching } from '../../src/api/generated-inference';
import { OnnxSession } from '../../src/api/tokens';
import type { Batcher } from '../../src/core/batcher';

interface Tensor {
  readonly type: string;
  readonly data: Float32Array;
  readonly dims: readonly number[];
}
interface Session {
  run(feeds: Record<string, Tensor>): Promise<Record<string, Tensor>>;
}

@injectable()
class Classifier {
  constructor(@inject(OnnxSession) private readonly session: Session) {}
  @batching(32)
  async predictBatch(texts: readonly string[]): Promise<Array<number | Error>> {
    return texts.map((t) => t.length);
  }
  @batching({ maxBatchSize: 8 })
  async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map(() => new Float32Array(4));
  }
  helper(): string {
    return 'not a batch method';
  }
}

/** A merged-style model: the batcher concatenates tensors, so the method takes one tensor. */
class Concat {
  @batching(16)
  async predictBatch(x: Tensor): Promise<Tensor> {
    return x;
  }
}

declare const tensor: Tensor;
declare const stringToLength: Batcher<string, number, string, number[], number>;

export async function createHostTypes(): Promise<void> {
  const host = await createHost(Classifier, { context: { [OnnxSession]: () => ({}) as Session } });
  expectTypeOf(host).toEqualTypeOf<HostedModel<string, number, readonly string[], Array<number | Error>>>();
  expectTypeOf(host.inference('x')).toEqualTypeOf<Promise<number>>();
  // @ts-expect-error -- the input is a string
  void host.inference(42);
  // reload: a new instance (a new context or the same providers again), or a batch function.
  expectTypeOf(host.reload()).toEqualTypeOf<Promise<void>>();
  void host.reload({ context: { [OnnxSession]: () => ({}) as Session }, version: '2' });
  void host.reload(async (xs: readonly string[]) => xs.map((x) => x.length));
  // @ts-expect-error -- not a reload option
  void host.reload({ contxt: {} });
  // @ts-expect-error -- the batch function must answer numbers
  void host.reload(async (xs: readonly string[]) => xs);

  const embed = await createHost(Classifier, { method: 'embedBatch' });
  expectTypeOf(embed.inference('x')).toEqualTypeOf<Promise<Float32Array>>();
  // @ts-expect-error -- not a method of Classifier
  void createHost(Classifier, { method: 'nope' });
  // @ts-expect-error -- a private field is not a batch method
  void createHost(Classifier, { method: 'session' });

  const merged = await createHost(Concat);
  expectTypeOf(merged.inference(tensor)).toEqualTypeOf<Promise<Tensor>>();
  // @ts-expect-error -- a tensor is expected
  void merged.inference([tensor]);

  const withBatcher = await createHost(Classifier, { batcher: stringToLength });
  expectTypeOf(withBatcher).toEqualTypeOf<HostedModel<string, number, string, number[]>>();

  // @ts-expect-error -- unknown option
  void createHost(Classifier, { maxBatchsize: 4 });
  // @ts-expect-error -- createHost takes a class
  void createHost({});
}

export function instanceTypes(): void {
  const model = asBatching(new Classifier({} as Session));
  expectTypeOf(model).toEqualTypeOf<Batching<Classifier>>();
  expectTypeOf(model.inference('x')).toEqualTypeOf<Promise<number>>();
  expectTypeOf(model.inference('x', { timeoutMs: 50, priority: 1 })).toEqualTypeOf<Promise<number>>();
  expectTypeOf(model.helper()).toEqualTypeOf<string>(); // the class's own members stay
  expectTypeOf(model[Symbol.asyncDispose]()).toEqualTypeOf<Promise<void>>();
  // @ts-expect-error -- the input is a string
  void model.inference(1);
  // @ts-expect-error -- unknown request option
  void model.inference('x', { deadline: 5 });

  class OnlyEmbed {
    @batching(8)
    async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
      return texts.map(() => new Float32Array(4));
    }
  }
  // without predictBatch the default method is unknown to the type system: name it
  expectTypeOf(asBatching(new OnlyEmbed()).inference).parameter(0).toBeUnknown();
  const embedder = asBatching<OnlyEmbed, 'embedBatch'>(new OnlyEmbed());
  expectTypeOf(embedder.inference('x')).toEqualTypeOf<Promise<Float32Array>>();
  // @ts-expect-error -- the input is a string
  void embedder.inference(1);
  expectTypeOf(asBatching(new Concat()).inference(tensor)).toEqualTypeOf<Promise<Tensor>>();
  // @ts-expect-error -- the plain class has no inference()
  void new Concat().inference(tensor);
}

export function decoratorTypes(): void {
  class Bad {
    // @ts-expect-error -- fields cannot be batched
    @batching(4) field = (xs: readonly number[]) => xs;
  }
  // @ts-expect-error -- the options object needs maxBatchSize
  void batching({ maxDelayMs: 1 });
  // @ts-expect-error -- unknown option
  void batching({ maxBatchSize: 1, delay: 1 });
  void Bad;
}

test('the type checks above compile (tsc runs them; see the file comment)', () => {
  expect([createHostTypes, instanceTypes, decoratorTypes].every((f) => typeof f === 'function')).toBe(true);
});
