/**
 * Every misuse a user can make of the engine, with the message they get. Each message says what
 * was expected and what came.
 */
import { ModelHost } from '../../src/engine/model-host';
import { Proxy } from '../../src/api/proxy';
import { ListBatcher } from '../../src/batchers/list-batcher';

const identity = async (xs: readonly number[]) => xs;
// Misuse from untyped JS: bypass the types on purpose.
const make = (fn: unknown, options: unknown) => new ModelHost(fn as typeof identity, options as { maxBatchSize: number });

describe('ModelHost constructor', () => {
  test.each([
    [undefined, 'ModelHost: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch), as the first argument, got undefined'],
    [42, 'ModelHost: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch), as the first argument, got 42 (number)'],
    [{ start() {} }, 'ModelHost: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch), as the first argument, got an object'],
  ])('rejects a first argument of %p', (fn, message) => {
    expect(() => make(fn, { maxBatchSize: 4 })).toThrow(new TypeError(message));
  });

  test.each([
    [undefined, TypeError, 'ModelHost: expected `options` to be an object with at least `maxBatchSize` (or a number: the maxBatchSize), got undefined'],
    [[4], TypeError, 'ModelHost: expected `options` to be an object with at least `maxBatchSize` (or a number: the maxBatchSize), got an array of length 1'],
    [{}, TypeError, 'ModelHost: expected `maxBatchSize` to be an integer from 1 and up (it is required), got undefined'],
    [0, RangeError, 'ModelHost: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'],
    [{ maxBatchSize: 2.5 }, RangeError, 'ModelHost: expected `maxBatchSize` to be an integer from 1 and up, got 2.5 (number)'],
    [{ maxBatchSize: '8' }, TypeError, 'ModelHost: expected `maxBatchSize` to be an integer from 1 and up, got "8" (string)'],
    [{ maxBatchSize: Infinity }, RangeError, 'ModelHost: expected `maxBatchSize` to be an integer from 1 and up, got Infinity (number)'],
    [{ maxBatchSize: 4, maxDelayMs: -1 }, RangeError, 'ModelHost: expected `maxDelayMs` to be a number of milliseconds >= 0, got -1 (number)'],
    [{ maxBatchSize: 4, maxDelayMs: NaN }, TypeError, 'ModelHost: expected `maxDelayMs` to be a number of milliseconds >= 0, got NaN (number)'],
    [{ maxBatchSize: 4, maxDelayMs: Infinity }, RangeError, 'ModelHost: expected `maxDelayMs` to be a number of milliseconds >= 0, got Infinity (number)'],
    [{ maxBatchSize: 4, maxConcurrentBatches: 0 }, RangeError, 'ModelHost: expected `maxConcurrentBatches` to be an integer from 1 and up, got 0 (number)'],
    [{ maxBatchSize: 4, maxQueueSize: 0 }, RangeError, 'ModelHost: expected `maxQueueSize` to be an integer from 1 and up (or Infinity), got 0 (number)'],
    [{ maxBatchSize: 4, timeoutMs: 0 }, RangeError, 'ModelHost: expected `timeoutMs` to be a number of milliseconds > 0 (or Infinity), got 0 (number)'],
    [{ maxBatchSize: 4, timeoutMs: '5' }, TypeError, 'ModelHost: expected `timeoutMs` to be a number of milliseconds > 0 (or Infinity), got "5" (string)'],
    [{ maxBatchSize: 4, maxLatencyMs: 0 }, RangeError, 'ModelHost: expected `maxLatencyMs` to be a number of milliseconds > 0 (or Infinity), got 0 (number)'],
    [{ maxBatchSize: 4, batchTimeoutMs: -3 }, RangeError, 'ModelHost: expected `batchTimeoutMs` to be a number of milliseconds > 0 (or Infinity), got -3 (number)'],
    [{ maxBatchSize: 4, policy: 'fastest' }, TypeError, "ModelHost: expected `policy` to be 'greedy', 'adaptive' or an object with a decide(view) method, got \"fastest\" (string)"],
    [{ maxBatchSize: 4, policy: {} }, TypeError, "ModelHost: expected `policy` to be 'greedy', 'adaptive' or an object with a decide(view) method, got an object"],
    [{ maxBatchSize: 4, isolateErrors: 'yes' }, TypeError, 'ModelHost: expected `isolateErrors` to be a boolean, got "yes" (string)'],
    [{ maxBatchSize: 4, name: '' }, TypeError, 'ModelHost: expected `name` to be a non-empty string, got "" (string)'],
    [{ maxBatchSize: 4, observer: () => {} }, TypeError, 'ModelHost: expected `observer` to be an object with optional onBatch/onRequest methods, got a function named observer'],
    [{ maxBatchSize: 4, clock: Date }, TypeError, 'ModelHost: expected `clock` to be an object with now(), setTimer() and clearTimer(), got a function named Date'],
    [{ maxBatchSize: 4, batcher: [] }, TypeError, 'ModelHost: expected `batcher` to be an object with merge(items) and split(output, ctx) methods, got an array of length 0'],
  ])('rejects options %p', (options, Err, message) => {
    expect(() => make(identity, options)).toThrow(new Err(message));
  });

  test('names an unknown option and lists the known ones (catches typos)', () => {
    expect(() => make(identity, { maxBatchSize: 4, maxDelayMS: 5 })).toThrow(
      new TypeError(
        'ModelHost: unknown option `maxDelayMS`; the known options are `maxBatchSize`, `maxDelayMs`, `maxConcurrentBatches`, `maxQueueSize`, `timeoutMs`, `maxLatencyMs`, `batchTimeoutMs`, `policy`, `batcher`, `isolateErrors`, `splitOversize`, `priorities`, `preferredBatchSizes`, `warmup`, `cache`, `name`, `observer`, `clock`',
      ),
    );
  });

  test('names errors after the host when it has a name', () => {
    expect(() => make(identity, { maxBatchSize: -2, name: 'ranker' })).toThrow(
      new RangeError('ranker: expected `maxBatchSize` to be an integer from 1 and up, got -2 (number)'),
    );
  });

  test('accepts a bare number as maxBatchSize and Infinity for unbounded limits', () => {
    expect(make(identity, 3).options).toEqual({
      maxBatchSize: 3,
      maxDelayMs: 0,
      maxConcurrentBatches: 1,
      maxQueueSize: Infinity,
      timeoutMs: Infinity,
      maxLatencyMs: Infinity,
      batchTimeoutMs: Infinity,
    });
  });
});

describe('inference()', () => {
  const host = new ModelHost(identity, { maxBatchSize: 4, name: 'h' });
  afterAll(() => host.stop());

  test.each([
    [null, TypeError, 'h.inference: expected `options` to be an object { signal?, timeoutMs?, priority? }, got null'],
    [{ timeout: 5 }, TypeError, 'h.inference: unknown option `timeout`; the known options are `signal`, `timeoutMs`, `priority`'],
    [{ timeoutMs: 0 }, RangeError, 'h.inference: expected `timeoutMs` to be a number of milliseconds > 0 (or Infinity), got 0 (number)'],
    [{ timeoutMs: NaN }, TypeError, 'h.inference: expected `timeoutMs` to be a number of milliseconds > 0 (or Infinity), got NaN (number)'],
    [{ priority: '1' }, TypeError, 'h.inference: expected `priority` to be a finite number (larger runs first), got "1" (string)'],
    [{ priority: Infinity }, TypeError, 'h.inference: expected `priority` to be a finite number (larger runs first), got Infinity (number)'],
    [{ signal: { aborted: false } }, TypeError, 'h.inference: expected `signal` to be an AbortSignal, got an object'],
  ])('rejects (never throws) per-call options %p', async (options, Err, message) => {
    const p = host.inference(1, options as never);
    expect(p).toBeInstanceOf(Promise);
    await expect(p).rejects.toThrow(new Err(message));
  });

  test('rejects items with a bad row count, naming maxBatchSize', async () => {
    const rows = new ModelHost(async (xs: readonly number[][]) => xs.map((x) => x.length), {
      maxBatchSize: 4,
      batcher: new ListBatcher<number[], number>({ rows: (x) => x.length }),
    });
    await expect(rows.inference([1, 2, 3, 4, 5])).rejects.toThrow(
      new RangeError('microbatch: a request must have from 1 to maxBatchSize (4) rows; this one has 5 (number). Split it, or raise maxBatchSize.'),
    );
    await expect(rows.inference([])).rejects.toThrow(
      new RangeError('microbatch: a request must have from 1 to maxBatchSize (4) rows; this one has 0 (number). Split it, or raise maxBatchSize.'),
    );
    await expect(rows.inference([1, 2])).resolves.toBe(2);
  });

  test('a rows function that throws rejects that request alone', async () => {
    const rows = new ModelHost(identity, {
      maxBatchSize: 4,
      batcher: new ListBatcher<number, number>({
        rows: (x) => {
          if (x < 0) throw new RangeError('negative');
          return 1;
        },
      }),
    });
    await expect(rows.inference(-1)).rejects.toThrow(new RangeError('negative'));
    await expect(rows.inference(1)).resolves.toBe(1);
  });
});

describe('stop() and configure()', () => {
  test('stop rejects a non-boolean drain', async () => {
    const host = new ModelHost(identity, { maxBatchSize: 4, name: 's' });
    await expect(host.stop({ drain: 'yes' as never })).rejects.toThrow(new TypeError('s.stop: expected `drain` to be a boolean, got "yes" (string)'));
    await host.stop();
  });

  test.each([
    [null, TypeError, 'c.configure: expected `options` to be an object, got null'],
    [{ batcher: new ListBatcher() }, TypeError, 'c.configure: unknown option `batcher`; the known options are `maxBatchSize`, `maxDelayMs`, `maxConcurrentBatches`, `maxQueueSize`, `timeoutMs`, `maxLatencyMs`, `batchTimeoutMs`'],
    [{ maxBatchSize: -1 }, RangeError, 'c.configure: expected `maxBatchSize` to be an integer from 1 and up, got -1 (number)'],
  ])('configure rejects %p and keeps the old options', (options, Err, message) => {
    const host = new ModelHost(identity, { maxBatchSize: 4, name: 'c' });
    expect(() => host.configure(options as never)).toThrow(new Err(message));
    expect(host.options.maxBatchSize).toBe(4);
  });
});

describe('ListBatcher and Proxy', () => {
  test('ListBatcher rejects a rows option that is not a function', () => {
    expect(() => new ListBatcher<number, number>({ rows: 3 as never })).toThrow(new TypeError('ListBatcher: expected `rows` to be a function (item) => number, got 3 (number)'));
  });

  test('a Proxy subclass gets the same checks, named after the subclass', () => {
    class Broken extends Proxy<number, number> {
      constructor() {
        super({ maxBatchSize: 0 });
      }
      protected async _inference(xs: readonly number[]): Promise<number[]> {
        return [...xs];
      }
    }
    expect(() => new Broken()).toThrow(new RangeError('Broken: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'));
  });
});

describe('broken extension points (custom batchers and executors)', () => {
  test('a partition that places an item in no group rejects that item alone, saying so', async () => {
    const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => x * 2), {
      maxBatchSize: 4,
      name: 'p',
      batcher: {
        // Forgets the last item: neither grouped nor rejected.
        partition: (items: readonly number[]) => ({ groups: [items.slice(0, -1).map((_, i) => i)] }),
        merge: (items: readonly number[]) => ({ batch: items, ctx: undefined }),
        split: (out: readonly number[]) => out,
      },
    });
    const [a, b, lost] = await Promise.allSettled([1, 2, 3].map((x) => host.inference(x)));
    expect([a, b]).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'fulfilled', value: 4 },
    ]);
    expect(lost).toEqual({ status: 'rejected', reason: new Error("p: the batcher's partition placed item 2 in no group and did not reject it") });
    await host.stop();
  });

  test('an executor whose start throws a non-Error rejects with an Error that keeps it as cause', async () => {
    const host = new ModelHost(
      {
        start: () => Promise.reject('no model'),
        run: async (xs: readonly number[]) => xs,
      },
      4,
    );
    const e = (await host.inference(1).catch((x: unknown) => x)) as Error;
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toBe('The executor\'s start threw a non-Error value: "no model" (string)');
    expect(e.cause).toBe('no model');
    await host.stop();
  });
});
