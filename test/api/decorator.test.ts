import 'reflect-metadata';
import { container as globalContainer, injectable } from 'tsyringe';
import { batching } from '../../src/api/batching';
import { getBatchingMetadata } from '../../src/api/batching-metadata';
import { asBatched, asBatching } from '../../src/api/generated-inference';
import { HostStoppedError } from '../../src/core/errors';

/** A list-style model that records every batch it receives. */
class Doubler {
  readonly calls: number[][] = [];
  @batching({ maxBatchSize: 8, maxDelayMs: 1, name: 'doubler' })
  async predictBatch(xs: readonly number[]): Promise<Array<number | Error>> {
    this.calls.push([...xs]);
    return xs.map((x) => (x < 0 ? new RangeError(`negative: ${x}`) : x * 2));
  }
}

describe('@batching metadata', () => {
  test('the options round-trip through the class metadata; a number is maxBatchSize', () => {
    expect(getBatchingMetadata(Doubler)).toEqual([{ method: 'predictBatch', options: { maxBatchSize: 8, maxDelayMs: 1, name: 'doubler' } }]);
    class Short {
      @batching(4)
      async predictBatch(xs: readonly string[]): Promise<string[]> {
        return [...xs];
      }
    }
    expect(getBatchingMetadata(Short)).toEqual([{ method: 'predictBatch', options: { maxBatchSize: 4 } }]);
    expect(Object.isFrozen(getBatchingMetadata(Short)[0]!.options)).toBe(true);
    expect(getBatchingMetadata(class Plain {})).toEqual([]);
  });

  test('the stored options are a copy: mutating the caller object later changes nothing', () => {
    const options = { maxBatchSize: 3 };
    class Copy {
      @batching(options)
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    options.maxBatchSize = 99;
    expect(getBatchingMetadata(Copy)[0]!.options.maxBatchSize).toBe(3);
  });

  test('the class form decorates predictBatch and behaves like the method form', async () => {
    @batching({ maxBatchSize: 5 })
    class ClassForm {
      readonly calls: number[][] = [];
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        this.calls.push([...xs]);
        return xs.map((x) => x + 1);
      }
    }
    expect(getBatchingMetadata(ClassForm)).toEqual([{ method: 'predictBatch', options: { maxBatchSize: 5 } }]);
    const m = asBatching(new ClassForm());
    await expect(Promise.all([1, 2, 3, 4, 5, 6].map((x) => m.inference(x)))).resolves.toEqual([2, 3, 4, 5, 6, 7]);
    expect(m.calls).toEqual([[1, 2, 3, 4, 5], [6]]);
    await m[Symbol.asyncDispose]();
  });

  test('a subclass inherits the metadata and may re-decorate an override without touching its base', () => {
    class Base {
      @batching(4)
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    class Inherits extends Base {}
    class Overrides extends Base {
      @batching(16)
      override async predictBatch(xs: readonly number[]): Promise<number[]> {
        return xs.map((x) => -x);
      }
    }
    expect(getBatchingMetadata(Inherits)).toEqual([{ method: 'predictBatch', options: { maxBatchSize: 4 } }]);
    expect(getBatchingMetadata(Overrides)).toEqual([{ method: 'predictBatch', options: { maxBatchSize: 16 } }]);
    expect(getBatchingMetadata(Base)).toEqual([{ method: 'predictBatch', options: { maxBatchSize: 4 } }]);
  });
});

describe('@batching misuse fails when the class is defined, saying what to do', () => {
  test('twice on one method', () => {
    expect(() => {
      class Twice {
        @batching(4)
        @batching(8)
        async predictBatch(xs: readonly number[]): Promise<number[]> {
          return [...xs];
        }
      }
      return Twice;
    }).toThrow(new TypeError(
      '@batching on Twice.predictBatch: @batching was applied twice to Twice.predictBatch; keep a single @batching(...) with all ' +
        'the options (the class form @batching(...) on a class counts as decorating predictBatch)',
    ));
  });

  test('the class form plus the method form on predictBatch is also twice', () => {
    expect(() => {
      @batching(4)
      class Both {
        @batching(4)
        async predictBatch(xs: readonly number[]): Promise<number[]> {
          return [...xs];
        }
      }
      return Both;
    }).toThrow(/applied twice to Both\.predictBatch/);
  });

  test('on a field, an accessor, a static method, or a class without predictBatch', () => {
    expect(() => {
      class Field {
        // @ts-expect-error -- a field is not a method (TypeScript refuses it too)
        @batching(4) predictBatch = async (xs: readonly number[]) => xs;
      }
      return Field;
    }).toThrow(new TypeError('@batching on Field.predictBatch: it is a field; @batching decorates a method: write `async predictBatch(batch) { ... }`'));
    expect(() => {
      class Accessor {
        @batching(4)
        get predictBatch(): (xs: readonly number[]) => number[] {
          return (xs) => [...xs];
        }
      }
      return Accessor;
    }).toThrow(new TypeError('@batching on Accessor.predictBatch: it is an accessor (get/set); @batching decorates a method that takes the batch'));
    expect(() => {
      class Static {
        @batching(4)
        static async predictBatch(xs: readonly number[]): Promise<number[]> {
          return [...xs];
        }
      }
      return Static;
    }).toThrow(new TypeError('@batching on Static.predictBatch: it is a static method; @batching decorates an instance method (the model\'s batch method)'));
    expect(() => {
      @batching(4)
      class NoPredict {
        async embed(xs: readonly number[]): Promise<number[]> {
          return [...xs];
        }
      }
      return NoPredict;
    }).toThrow(new TypeError(
      '@batching on class NoPredict: the class form decorates predictBatch, and NoPredict has no predictBatch method; add one, ' +
        'or put @batching(...) on the batch method itself',
    ));
  });

  test('without parentheses, with bad options, or as a TC39 standard decorator', () => {
    const bare = batching as unknown as (target: unknown, key: string, d: PropertyDescriptor) => void;
    expect(() => bare({}, 'predictBatch', { value: () => [] })).toThrow(
      new TypeError('@batching needs its options: write @batching(32) or @batching({ maxBatchSize: 32, ... }), with the parentheses'),
    );
    expect(() => batching(null as unknown as number)).toThrow(new TypeError('@batching: expected a maxBatchSize (a number) or an options object, got null'));
    expect(() => {
      class Bad {
        // @ts-expect-error -- typo in an option name
        @batching({ maxBatchsize: 4 })
        async predictBatch(xs: readonly number[]): Promise<number[]> {
          return [...xs];
        }
      }
      return Bad;
    }).toThrow(/@batching on Bad\.predictBatch: unknown option `maxBatchsize`; the known options are `maxBatchSize`/);
    expect(() => {
      class Zero {
        @batching(0)
        async predictBatch(xs: readonly number[]): Promise<number[]> {
          return [...xs];
        }
      }
      return Zero;
    }).toThrow(new RangeError('@batching on Zero.predictBatch: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'));
    const tc39 = batching(4) as unknown as (value: unknown, context: { kind: string; name: string }) => void;
    expect(() => tc39(() => [], { kind: 'method', name: 'predictBatch' })).toThrow(/applied as a TC39 standard decorator.*"experimentalDecorators": true/);
  });

  test('applied by hand to something that is neither a class nor a method', () => {
    const decorate = batching(4) as unknown as (target: unknown, key?: string, d?: PropertyDescriptor) => void;
    expect(() => decorate({ not: 'a class' })).toThrow(new TypeError('@batching: expected a class or a method, got an object'));
    class Holder {}
    expect(() => decorate(Holder.prototype, 'predictBatch', { value: 42 })).toThrow(
      new TypeError('@batching on Holder.predictBatch: expected a method, got 42 (number)'),
    );
    expect(getBatchingMetadata(Holder)).toEqual([]);
  });

  test('asBatched (deprecated: asBatching) is the same function', () => {
    expect(asBatched).toBe(asBatching);
  });

  test('asBatching refuses an instance of a class without @batching', () => {
    class Plain {}
    expect(() => asBatching(new Plain())).toThrow(
      new TypeError('asBatching: expected an instance of a class with an @batching method, got an instance of Plain; decorate its batch method with @batching(...)'),
    );
  });
});

describe('generated inference()', () => {
  test('batches concurrent callers of one instance, with per-item errors, then asyncDispose drains and tears it down', async () => {
    const model = asBatching(new Doubler());
    const results = await Promise.allSettled([1, 2, -3, 4].map((x) => model.inference(x)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: 4 },
      { status: 'rejected', reason: new RangeError('negative: -3') },
      { status: 'fulfilled', value: 8 },
    ]);
    expect(model.calls).toEqual([[1, 2, -3, 4]]);

    const late = [5, 6].map((x) => model.inference(x));
    await model[Symbol.asyncDispose]();
    await expect(Promise.all(late)).resolves.toEqual([10, 12]); // accepted requests are answered
    await expect(model.inference(7)).rejects.toBeInstanceOf(HostStoppedError);
    expect(model.calls).toEqual([[1, 2, -3, 4], [5, 6]]);
  });

  test('each instance has its own host; disposing before any call refuses later calls', async () => {
    const a = asBatching(new Doubler());
    const b = asBatching(new Doubler());
    await Promise.all([a.inference(1), b.inference(2), a.inference(3)]);
    expect(a.calls).toEqual([[1, 3]]);
    expect(b.calls).toEqual([[2]]);
    const fresh = asBatching(new Doubler());
    await fresh.dispose();
    await expect(fresh.inference(1)).rejects.toThrow(new HostStoppedError('Doubler: this instance was disposed; its inference() accepts no new requests'));
    await Promise.all([a.dispose(), b.dispose()]);
  });

  test('an instance built by a container is torn down when that container is disposed, after which its own dispose() ran', async () => {
    const events: string[] = [];
    @injectable()
    class Owned {
      @batching(4)
      async predictBatch(xs: readonly string[]): Promise<string[]> {
        events.push(`batch ${xs.join(',')}`);
        return xs.map((x) => x.toUpperCase());
      }
      dispose(): void {
        events.push('own dispose');
      }
    }
    const child = globalContainer.createChildContainer();
    const model = asBatching(child.resolve(Owned));
    const pending = Promise.all(['a', 'b'].map((x) => model.inference(x)));
    await child.dispose();
    await expect(pending).resolves.toEqual(['A', 'B']);
    expect(events).toEqual(['batch a,b', 'own dispose']);
    await expect(model.inference('c')).rejects.toBeInstanceOf(HostStoppedError);
    expect(globalContainer.isRegistered(Owned)).toBe(false);
  });

  test('a subclass whose dispose() awaits super.dispose() first releases its own things after the host drained', async () => {
    const events: string[] = [];
    class Base {
      @batching(4)
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        events.push('batch');
        return [...xs];
      }
      async dispose(): Promise<void> {
        events.push('base dispose');
      }
    }
    class Sub extends Base {
      override async dispose(): Promise<void> {
        await super.dispose();
        events.push('sub dispose');
      }
    }
    const s = asBatching(new Sub());
    const p = s.inference(1);
    await s.dispose();
    await p;
    expect(events).toEqual(['batch', 'base dispose', 'sub dispose']);
  });

  test('a class keeps its own inference(); it is not replaced', async () => {
    class Custom {
      inference(x: number): Promise<string> {
        return Promise.resolve(`custom ${x}`);
      }
      @batching(4)
      async predictBatch(xs: readonly number[]): Promise<string[]> {
        return xs.map(String);
      }
    }
    await expect(new Custom().inference(1)).resolves.toBe('custom 1');
  });
});

describe('a class with two @batching methods', () => {
  class TwoHeads {
    readonly seen: string[] = [];
    @batching(4)
    async predictBatch(xs: readonly number[]): Promise<number[]> {
      this.seen.push(`predict ${xs.length}`);
      return xs.map((x) => x * 10);
    }
    @batching({ maxBatchSize: 2 })
    async embedBatch(xs: readonly number[]): Promise<number[][]> {
      this.seen.push(`embed ${xs.length}`);
      return xs.map((x) => [x, x]);
    }
  }

  test('both are recorded, and inference() maps to predictBatch', async () => {
    expect(getBatchingMetadata(TwoHeads).map((m) => m.method)).toEqual(['predictBatch', 'embedBatch']);
    const m = asBatching(new TwoHeads());
    await expect(Promise.all([1, 2, 3].map((x) => m.inference(x)))).resolves.toEqual([10, 20, 30]);
    expect(m.seen).toEqual(['predict 3']);
    await m.dispose();
  });

  test('without predictBatch and with two methods, inference() rejects and says how to choose', async () => {
    class Ambiguous {
      @batching(4)
      async scoreBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
      @batching(4)
      async embedBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    const m = asBatching(new Ambiguous());
    await expect(m.inference(1 as never)).rejects.toThrow(
      new TypeError(
        'Ambiguous.inference: Ambiguous has several @batching methods (`scoreBatch`, `embedBatch`) and none is named predictBatch, ' +
          "so the default cannot be chosen; pick one with createHost(Ambiguous, { method: '…' }), or rename one to predictBatch",
      ),
    );
  });

  test('with a single decorated method of another name, inference() maps to it', async () => {
    class OnlyEmbed {
      @batching(4)
      async embedBatch(xs: readonly string[]): Promise<number[]> {
        return xs.map((x) => x.length);
      }
    }
    const m = asBatching(new OnlyEmbed());
    await expect(m.inference('abc')).resolves.toBe(3);
    await m.dispose();
  });
});
