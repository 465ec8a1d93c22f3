import { ModelHost } from '../../src/engine/model-host';
import { HostStoppedError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import { ControlledModel, settle, track } from '../support/controlled-model';

function setup(maxBatchSize = 2) {
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const host = new ModelHost(model.fn, { maxBatchSize, clock, name: 'life' });
  return { clock, model, host };
}

describe('stop', () => {
  test('drain (the default) answers everything accepted, in full batches, then resolves', async () => {
    const { model, host } = setup(2);
    const ps = [1, 2, 3, 4, 5].map((x) => host.inference(x));
    await settle();
    const stopped = track(host.stop());
    await expect(host.inference(6)).rejects.toThrow(new HostStoppedError('life: the host is stopped (or stopping) and accepts no new requests'));
    for (let i = 0; i < 3; i++) {
      expect(stopped.state).toBe('pending');
      model.answer(i, (x) => x * 2);
      await settle();
    }
    expect(model.sizes).toEqual([2, 2, 1]);
    await expect(Promise.all(ps)).resolves.toEqual([2, 4, 6, 8, 10]);
    await settle();
    expect(stopped.state).toBe('resolved');
    expect(host.stats.rejected.stopped).toBe(1);
  });

  test('drain releases without waiting for the maxDelayMs window', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const host = new ModelHost(model.fn, { maxBatchSize: 8, maxDelayMs: 1000, clock });
    const p = host.inference(1);
    await settle();
    expect(model.sizes).toEqual([]);
    const stopped = host.stop();
    await settle();
    expect(model.sizes).toEqual([1]);
    model.answer(0, (x) => x);
    await expect(p).resolves.toBe(1);
    await stopped;
  });

  test('drain: false rejects what is queued; the running batch still finishes and delivers', async () => {
    const { model, host } = setup(2);
    const running = [host.inference(1), host.inference(2)];
    await settle();
    const queued = [host.inference(3), host.inference(4)];
    const stopped = track(host.stop({ drain: false }));
    for (const p of queued) {
      await expect(p).rejects.toThrow(new HostStoppedError('life: the host was stopped without draining before this request ran'));
    }
    await settle();
    expect(stopped.state).toBe('pending');
    model.answer(0, (x) => -x);
    await expect(Promise.all(running)).resolves.toEqual([-1, -2]);
    await settle();
    expect(stopped.state).toBe('resolved');
    expect(model.sizes).toEqual([2]);
    expect(host.stats.rejected.stopped).toBe(2);
  });

  test('a second stop returns the same promise, and drain: false then drops what is still queued', async () => {
    const { model, host } = setup(1);
    host.inference(1);
    await settle();
    const queued = host.inference(2);
    const first = host.stop();
    const second = host.stop({ drain: false });
    expect(second).toBe(first);
    await expect(queued).rejects.toBeInstanceOf(HostStoppedError);
    model.answer(0, (x) => x);
    await first;
  });

  test('stop on an idle host resolves at once and later calls reject', async () => {
    const { host } = setup();
    await host.stop();
    await expect(host.inference(1)).rejects.toBeInstanceOf(HostStoppedError);
  });

  test('await using stops the host at the end of the scope', async () => {
    let host: ModelHost<number, number> | undefined;
    {
      await using h = new ModelHost(async (xs: readonly number[]) => xs, 4);
      host = h;
      await expect(h.inference(3)).resolves.toBe(3);
    }
    await expect(host.inference(1)).rejects.toBeInstanceOf(HostStoppedError);
  });

  test('onIdle resolves once nothing is queued or running', async () => {
    const { model, host } = setup(1);
    await host.onIdle();
    host.inference(1);
    host.inference(2);
    const idle = track(host.onIdle());
    await settle();
    model.answer(0, (x) => x);
    await settle();
    expect(idle.state).toBe('pending');
    model.answer(1, (x) => x);
    await settle();
    expect(idle.state).toBe('resolved');
  });
});

describe('executor lifecycle', () => {
  test('start is idempotent; the executor starts once, before the first batch, and stops once after the last', async () => {
    const log: string[] = [];
    let release!: () => void;
    const host = new ModelHost(
      {
        start: () => new Promise<void>((r) => { log.push('start'); release = r; }), // prettier-ignore
        run: async (xs: readonly number[]) => (log.push(`run ${xs.join(',')}`), xs),
        stop: async () => void log.push('stop'),
      },
      4,
    );
    const p = host.inference(1);
    const q = host.inference(2);
    await settle();
    expect(log).toEqual(['start']);
    const again = host.start();
    release();
    await again;
    await expect(Promise.all([p, q])).resolves.toEqual([1, 2]);
    await host.stop();
    await host.stop();
    expect(log).toEqual(['start', 'run 1,2', 'stop']);
  });

  test('an executor that fails to start rejects queued and later requests with its error', async () => {
    const host = new ModelHost(
      {
        start: async () => {
          throw new Error('model file missing');
        },
        run: async (xs: readonly number[]) => xs,
      },
      4,
    );
    const queued = host.inference(1);
    await expect(queued).rejects.toThrow('model file missing');
    await expect(host.start()).rejects.toThrow('model file missing');
    await expect(host.inference(2)).rejects.toThrow('model file missing');
    await host.stop();
  });

  test('an idle host that never started does not start its executor just to stop it', async () => {
    const log: string[] = [];
    const host = new ModelHost({ start: async () => void log.push('start'), run: (xs: readonly number[]) => xs, stop: async () => void log.push('stop') }, 2);
    await host.stop();
    expect(log).toEqual([]);
  });
});

describe('configure', () => {
  test('new limits apply from the next batch', async () => {
    const { model, host } = setup(2);
    host.inference(0);
    await settle();
    for (let i = 1; i <= 6; i++) host.inference(i);
    host.configure({ maxBatchSize: 5 });
    expect(host.options.maxBatchSize).toBe(5);
    model.answer(0, (x) => x);
    await settle();
    expect(model.sizes).toEqual([1, 5]);
  });

  test('lowering maxBatchSize rejects queued requests that no longer fit', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number[], number>();
    const { ListBatcher } = await import('../../src/batchers/list-batcher');
    const host = new ModelHost(model.fn, { maxBatchSize: 4, clock, batcher: new ListBatcher<number[], number>({ rows: (r) => r.length }) });
    host.inference([0]);
    await settle();
    const big = host.inference([1, 1, 1]);
    const small = host.inference([2]);
    host.configure({ maxBatchSize: 2 });
    await expect(big).rejects.toThrow(new RangeError('microbatch: maxBatchSize was lowered to 2, below this request\'s 3 rows'));
    model.answer(0, () => 0);
    await settle();
    model.answer(1, (r) => r.length);
    await expect(small).resolves.toBe(1);
  });

  test('shortening maxDelayMs takes effect for requests already waiting', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const host = new ModelHost(model.fn, { maxBatchSize: 8, maxDelayMs: 100, clock });
    host.inference(1);
    await settle();
    clock.advance(10);
    host.configure({ maxDelayMs: 10 });
    await settle();
    expect(model.sizes).toEqual([1]);
  });
});
