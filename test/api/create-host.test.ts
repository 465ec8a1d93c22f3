import 'reflect-metadata';
import { container as globalContainer, inject, injectable, type DependencyContainer } from 'tsyringe';
import { batching } from '../../src/api/batching';
import { ContextProviderError } from '../../src/api/context';
import { createHost } from '../../src/api/create-host';
import { HostStoppedError } from '../../src/core/errors';

const Scale = Symbol('Scale');
const Offset = Symbol('Offset');
const Log = 'log';

/** A resource that records when it is released, through whichever convention it offers. */
class Resource {
  constructor(
    readonly name: string,
    private readonly log: string[],
  ) {}
  release(): void {
    this.log.push(`release ${this.name}`);
  }
}

@injectable()
class Affine {
  readonly batches: number[][] = [];
  constructor(
    @inject(Scale) private readonly scale: { factor: number },
    @inject(Offset) private readonly offset: number,
  ) {}
  @batching({ maxBatchSize: 4, name: 'affine' })
  async predictBatch(xs: readonly number[]): Promise<number[]> {
    this.batches.push([...xs]);
    return xs.map((x) => x * this.scale.factor + this.offset);
  }
}

describe('createHost context injection', () => {
  test('sync and async factories and values are injected; the host is started and batches', async () => {
    let loads = 0;
    const host = await createHost(Affine, {
      context: {
        [Scale]: async () => {
          loads++;
          await new Promise((r) => setTimeout(r, 5));
          return { factor: 3 };
        },
        [Offset]: { useValue: 1 },
      },
    });
    expect(loads).toBe(1); // awaited once, before createHost resolved
    await expect(Promise.all([1, 2, 3].map((x) => host.inference(x)))).resolves.toEqual([4, 7, 10]);
    expect(host.stats).toMatchObject({ batches: 1, requests: 3 });
    expect(host.name).toBe('affine');
    expect(loads).toBe(1);
    await host.stop();
  });

  test('{ useFactory } and a sync plain factory receive the child container and may resolve earlier tokens', async () => {
    let seen: DependencyContainer | undefined;
    const host = await createHost(Affine, {
      context: {
        [Scale]: { useFactory: () => ({ factor: 2 }) },
        [Offset]: (c) => {
          seen = c;
          return c.resolve<{ factor: number }>(Scale).factor * 100;
        },
      },
    });
    expect(seen).toBeDefined();
    expect(seen).not.toBe(globalContainer);
    await expect(host.inference(1)).resolves.toBe(202);
    await host.stop();
  });

  test('a failing async provider rejects createHost naming the token, with its error as cause, after releasing earlier context', async () => {
    const log: string[] = [];
    const boom = new Error('model file not found');
    const made = createHost(Affine, {
      context: {
        [Offset]: () => new Resource('offset', log),
        [Scale]: async () => {
          throw boom;
        },
      },
    });
    await expect(made).rejects.toBeInstanceOf(ContextProviderError);
    const error = (await made.catch((e: unknown) => e)) as ContextProviderError;
    expect(error.message).toBe('createHost(Affine): the context provider for Symbol(Scale) failed: model file not found');
    expect(error.cause).toBe(boom);
    expect(error.token).toBe(Scale);
    expect(log).toEqual(['release offset']);
  });

  test('a failing sync provider and a failing useClass are reported the same way', async () => {
    await expect(
      createHost(Affine, {
        context: {
          [Log]: () => {
            throw new TypeError('bad config');
          },
        },
      }),
    ).rejects.toThrow(new ContextProviderError('createHost(Affine)', Log, new TypeError('bad config')));
    class Explodes {
      constructor() {
        throw new Error('ctor failed');
      }
    }
    const e = await createHost(Affine, { context: new Map([[Scale, { useClass: Explodes }]]) }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ContextProviderError);
    expect((e as Error).message).toBe('createHost(Affine): the context provider for Symbol(Scale) failed: ctor failed');
    expect(((e as Error).cause as Error).message).toBe('ctor failed');
  });

  test('a provider of the wrong shape fails before anything is created', async () => {
    class Tokenizer {}
    await expect(createHost(Affine, { context: { [Scale]: Tokenizer as never } })).rejects.toThrow(
      new TypeError(
        'createHost(Affine): the context provider for Symbol(Scale) is a class (class Tokenizer): write { useClass: Tokenizer } to construct it; ' +
          'expected a factory function, { useValue }, { useFactory } or { useClass }',
      ),
    );
    await expect(createHost(Affine, { context: { [Scale]: { usevalue: 1 } as never } })).rejects.toThrow(/has none of useValue, useFactory, useClass/);
    await expect(createHost(Affine, { context: { [Scale]: 3 as never } })).rejects.toThrow(/the context provider for Symbol\(Scale\) is 3 \(number\)/);
    const expected = '; expected a factory function, { useValue }, { useFactory } or { useClass }';
    await expect(createHost(Affine, { context: { [Scale]: { useValue: 1, useFactory: () => 2 } as never } })).rejects.toThrow(
      new TypeError(`createHost(Affine): the context provider for Symbol(Scale) has more than one of useValue, useFactory, useClass${expected}`),
    );
    await expect(createHost(Affine, { context: { [Scale]: { useFactory: 3 } as never } })).rejects.toThrow(
      new TypeError(`createHost(Affine): the context provider for Symbol(Scale) has a useFactory that is 3 (number)${expected}`),
    );
    await expect(createHost(Affine, { context: { [Scale]: { useClass: 'Tokenizer' } as never } })).rejects.toThrow(
      new TypeError(`createHost(Affine): the context provider for Symbol(Scale) has a useClass that is "Tokenizer" (string)${expected}`),
    );
    await expect(createHost(Affine, { context: 5 as never })).rejects.toThrow(
      new TypeError('createHost(Affine): expected `context` to be a record { [token]: provider } or [token, provider] pairs, got 5 (number)'),
    );
  });

  test('a missing dependency rejects with a message that says how to inject it', async () => {
    const e = (await createHost(Affine, { context: { [Scale]: { useValue: { factor: 1 } } } }).catch((x: unknown) => x)) as Error;
    expect(e.message).toMatch(/^createHost\(Affine\): could not resolve Affine from the container: .*Symbol\(Offset\).*Mark it @injectable\(\)/s);
    expect(e.cause).toBeInstanceOf(Error);
  });

  test('class tokens work through [token, provider] pairs, and useClass instances are built by the child container', async () => {
    class Greeting {
      readonly text: string = 'hi';
    }
    @injectable()
    class Greeter {
      constructor(@inject(Greeting) private readonly g: Greeting) {}
      @batching(8)
      async predictBatch(names: readonly string[]): Promise<string[]> {
        return names.map((n) => `${this.g.text} ${n}`);
      }
    }
    class LoudGreeting extends Greeting {
      override readonly text = 'HELLO';
    }
    const host = await createHost(Greeter, { context: [[Greeting, { useClass: LoudGreeting }]] });
    await expect(host.inference('ada')).resolves.toBe('HELLO ada');
    await host.stop();
    expect(globalContainer.isRegistered(Greeting, true)).toBe(false);
  });

  test('the parent container is used for what the context does not provide, and is never written to', async () => {
    const parent = globalContainer.createChildContainer();
    parent.register(Offset, { useValue: 5 });
    const host = await createHost(Affine, { container: parent, context: { [Scale]: { useValue: { factor: 1 } } } });
    await expect(host.inference(1)).resolves.toBe(6);
    expect(parent.isRegistered(Scale)).toBe(false);
    expect(globalContainer.isRegistered(Scale, true)).toBe(false);
    await host.stop();
    expect(parent.resolve(Offset)).toBe(5); // the parent stays usable
  });
});

describe('createHost disposal', () => {
  test('stop() drains, then releases the instance and the created context in reverse order; useValue is left alone', async () => {
    const log: string[] = [];
    const First = Symbol('First');
    const Second = Symbol('Second');
    const Third = Symbol('Third');
    const Fourth = Symbol('Fourth');
    const Fifth = Symbol('Fifth');
    const callerOwned = { dispose: () => log.push('dispose caller value') };
    @injectable()
    class Model {
      constructor(@inject(Fifth) readonly fifth: unknown) {}
      @batching(4)
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        log.push(`batch ${xs.join(',')}`);
        return [...xs];
      }
      async [Symbol.asyncDispose](): Promise<void> {
        log.push('asyncDispose model');
      }
    }
    class ClassProvided {
      dispose(): void {
        log.push('dispose class-provided');
      }
    }
    const host = await createHost(Model, {
      context: new Map<symbol, unknown>([
        [First, async () => ({ [Symbol.asyncDispose]: async () => void log.push('asyncDispose first') })],
        [Second, () => ({ [Symbol.dispose]: () => void log.push('dispose second') })],
        [Third, { useValue: callerOwned }],
        [Fourth, { useClass: ClassProvided }],
        [Fifth, () => new Resource('fifth', log)],
      ]) as never,
    });
    const pending = [1, 2].map((x) => host.inference(x));
    await host.stop();
    await expect(Promise.all(pending)).resolves.toEqual([1, 2]);
    expect(log).toEqual([
      'batch 1,2',
      'asyncDispose model',
      'release fifth',
      'dispose class-provided',
      'dispose second',
      'asyncDispose first',
    ]);
    await expect(host.inference(3)).rejects.toBeInstanceOf(HostStoppedError);
  });

  test('what tsyringe built on its own is disposed with the child container, and nothing is disposed twice', async () => {
    const log: string[] = [];
    @injectable()
    class Tokenizer {
      dispose(): void {
        log.push('dispose tokenizer');
      }
    }
    class Cache {
      dispose(): void {
        log.push('dispose cache');
      }
    }
    const CacheToken = Symbol('Cache');
    @injectable()
    class Model {
      constructor(
        readonly tokenizer: Tokenizer,
        @inject(CacheToken) readonly cache: Cache,
      ) {}
      @batching(4)
      async predictBatch(xs: readonly string[]): Promise<number[]> {
        return xs.map((x) => x.length);
      }
      dispose(): void {
        log.push('dispose model');
      }
    }
    const host = await createHost(Model, { context: { [CacheToken]: { useClass: Cache } } });
    await expect(host.inference('abc')).resolves.toBe(3);
    await host.stop();
    expect(log).toEqual(['dispose model', 'dispose cache', 'dispose tokenizer']);
  });

  test('a release that throws makes stop() reject, after every other resource was still released', async () => {
    const log: string[] = [];
    const host = await createHost(Affine, {
      context: {
        [Scale]: () => ({ factor: 1, release: () => log.push('release scale') }),
        [Offset]: () =>
          Object.assign(Object.create(null) as object, {
            release: () => {
              throw new Error('release failed');
            },
          }),
      },
    });
    await expect(host.stop()).rejects.toThrow('release failed');
    expect(log).toEqual(['release scale']);
  });

  test('when several releases throw, stop() rejects with an AggregateError holding each error', async () => {
    const failing = (what: string) => () => ({
      release: () => {
        throw new Error(`${what} release failed`);
      },
    });
    const host = await createHost(Affine, { context: { [Scale]: failing('scale'), [Offset]: failing('offset') } });
    const e = (await host.stop().catch((x: unknown) => x)) as AggregateError;
    expect(e).toBeInstanceOf(AggregateError);
    expect(e.message).toBe('createHost(Affine): 2 resources failed to release');
    expect(e.errors.map((x: Error) => x.message)).toEqual(['offset release failed', 'scale release failed']); // last created first
  });
});

describe('createHost options', () => {
  test('overrides beat the decorator options, undefined keeps them, and configure() beats both', async () => {
    const ctx = { [Scale]: { useValue: { factor: 1 } }, [Offset]: { useValue: 0 } };
    const host = await createHost(Affine, { context: ctx, maxBatchSize: 2, name: undefined, maxDelayMs: undefined });
    expect(host.options.maxBatchSize).toBe(2);
    expect(host.name).toBe('affine');
    const all = Promise.all([1, 2, 3, 4, 5].map((x) => host.inference(x)));
    await all;
    expect(host.stats.batches).toBe(3);
    host.configure({ maxBatchSize: 5 });
    await Promise.all([1, 2, 3, 4, 5].map((x) => host.inference(x)));
    expect(host.stats.batches).toBe(4);
    await host.stop();
    const plain = await createHost(Affine, { context: ctx });
    expect(plain.options.maxBatchSize).toBe(4);
    await plain.stop();
  });

  test('method picks any decorated method; its options apply and its name is the default host name', async () => {
    class TwoHeads {
      @batching(4)
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        return xs.map((x) => x * 10);
      }
      @batching({ maxBatchSize: 2, maxDelayMs: 1 })
      async embedBatch(xs: readonly number[]): Promise<number[][]> {
        return xs.map((x) => [x, -x]);
      }
    }
    const embed = await createHost(TwoHeads, { method: 'embedBatch' });
    expect(embed.name).toBe('TwoHeads.embedBatch');
    expect(embed.options).toMatchObject({ maxBatchSize: 2, maxDelayMs: 1 });
    await expect(embed.inference(3)).resolves.toEqual([3, -3]);
    const predict = await createHost(TwoHeads);
    expect(predict.name).toBe('TwoHeads.predictBatch');
    await expect(predict.inference(3)).resolves.toBe(30);
    await Promise.all([embed.stop(), predict.stop()]);
  });

  test('several decorated methods and none named predictBatch: createHost asks for method', async () => {
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
    await expect(createHost(Ambiguous)).rejects.toThrow(/createHost\(Ambiguous\): Ambiguous has several @batching methods \(`scoreBatch`, `embedBatch`\)/);
    const score = await createHost(Ambiguous, { method: 'scoreBatch' });
    await expect(score.inference(2)).resolves.toBe(2);
    await score.stop();
  });

  test('misuse: no @batching method, an undecorated method, unknown or bad options — before any provider runs', async () => {
    let ran = false;
    const provider = { [Scale]: () => void (ran = true) };
    class Plain {
      async predictBatch(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    await expect(createHost(Plain, { context: provider })).rejects.toThrow(
      new TypeError(
        'createHost(Plain): Plain has no @batching method. Decorate its batch method, for example ' +
          '`@batching(32) async predictBatch(items) { ... }` (and import "reflect-metadata" first)',
      ),
    );
    await expect(createHost(Affine, { method: 'batches' as never, context: provider })).rejects.toThrow(
      new TypeError('createHost(Affine): Affine.batches is not decorated with @batching; the @batching methods of Affine are `predictBatch`'),
    );
    // @ts-expect-error -- typo in an option name
    await expect(createHost(Affine, { maxBatchsize: 3, context: provider })).rejects.toThrow(/createHost\(Affine\): unknown option `maxBatchsize`; the known options are `container`, `context`, `method`, `executor`, `stopExecutor`, `maxBatchSize`/);
    await expect(createHost(Affine, { maxBatchSize: -1, context: provider })).rejects.toThrow(RangeError);
    await expect(createHost(Affine, { container: {} as never, context: provider })).rejects.toThrow(/expected `container` to be a tsyringe DependencyContainer/);
    await expect(createHost(42 as never)).rejects.toThrow(new TypeError('createHost(?): expected a class with an @batching method, got 42 (number)'));
    await expect(createHost(Affine, 5 as never)).rejects.toThrow(new TypeError('createHost(Affine): expected `options` to be an object, got 5 (number)'));
    expect(ran).toBe(false);
  });
});

describe('createHost reload', () => {
  test('reload() runs the providers again beside the serving instance; reload({ context }) takes a new one; the old instance and context are released after their batches', async () => {
    const log: string[] = [];
    let factor = 2;
    const host = await createHost(Affine, {
      context: { [Scale]: () => ({ factor, release: () => void log.push(`release scale ${factor}`) }), [Offset]: { useValue: 1 } },
    });
    expect(await host.inference(3)).toBe(7);
    factor = 10;
    await host.reload();
    expect(host.version).toBe('2');
    expect(await host.inference(3)).toBe(31);
    expect(log).toEqual(['release scale 10']); // the first context, released with its instance (its closure reads factor now)
    await host.reload({ context: { [Scale]: () => ({ factor: -1 }), [Offset]: { useValue: 0 } }, version: 'neg' });
    expect(await host.inference(3)).toBe(-3);
    expect(host.version).toBe('neg');
    await host.stop();
  });

  test('a provider that fails during a reload rejects it with the ContextProviderError as cause; the current instance keeps serving', async () => {
    const host = await createHost(Affine, { context: { [Scale]: () => ({ factor: 2 }), [Offset]: { useValue: 0 } } });
    const err = (await host.reload({ context: { [Scale]: () => Promise.reject(new Error('model file is corrupt')), [Offset]: { useValue: 0 } } }).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/^affine\.reload: the new model could not be started, so the current one keeps serving: .*model file is corrupt/);
    expect(err.cause).toBeInstanceOf(ContextProviderError);
    expect(await host.inference(3)).toBe(6);
    expect(host.version).toBe('1');
    await host.stop();
  });

  test('bad reload arguments are named before anything is built; a batch function still swaps in as it is', async () => {
    let built = 0;
    const host = await createHost(Affine, { context: { [Scale]: () => (built++, { factor: 2 }), [Offset]: { useValue: 0 } } });
    await expect(host.reload({ contxt: {} } as never)).rejects.toThrow(
      new TypeError('createHost(Affine).reload: unknown option `contxt`; the known options are `version`, `context`'),
    );
    await expect(host.reload(42 as never)).rejects.toThrow(
      new TypeError('createHost(Affine).reload: expected `options` to be an object { context?, version? }, a batch function, or an executor object with run(batch), got 42 (number)'),
    );
    await expect(host.reload({ version: '' })).rejects.toThrow(TypeError);
    expect(built).toBe(1);
    await host.reload(async (xs: readonly number[]) => xs.map((x) => x * 100));
    expect(await host.inference(3)).toBe(300);
    await host.stop();
  });

  test('with an executor object, reload({ context }) is refused (nothing here is built from one); reload(executor) works', async () => {
    const host = await createHost(Affine, { executor: { run: (xs: readonly number[]) => xs.map((x) => x + 1) } });
    await expect(host.reload()).rejects.toThrow(
      new TypeError('createHost(Affine).reload: this host runs on your executor object, and nothing here is built from a context; pass the new executor: reload(executor)'),
    );
    await host.reload({ run: (xs: readonly number[]) => xs.map((x) => x + 2) });
    expect(await host.inference(1)).toBe(3);
    await host.stop();
  });
});
