import { ModelHost } from '../../src/engine/model-host';
import { ManualClock } from '../../src/core/manual-clock';
import { settle } from '../support/controlled-model';

/** Holds the JS thread for `ms` of wall time, as an inline onnxruntime run does. */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* spin */
  }
}

describe('the next decision after a batch that blocked the event loop', () => {
  test('sees the requests whose timers fell due while the loop was blocked (real event loop)', async () => {
    const sizes: number[] = [];
    const host = new ModelHost(
      async (xs: readonly number[]) => {
        sizes.push(xs.length);
        if (sizes.length === 1) block(15); // the first batch holds the loop; the others are quick
        return xs;
      },
      { maxBatchSize: 4 },
    );
    // An arrival timer set before the blocking batch: due 1 ms later, it can only run once the
    // batch has let go of the loop, in the timers phase.
    const late: Array<Promise<number>> = [];
    setTimeout(() => {
      for (let i = 10; i < 13; i++) late.push(host.inference(i));
    }, 1);
    // Five requests at once: four fill the first batch, the fifth waits for the next one.
    const first = [0, 1, 2, 3, 4].map((i) => host.inference(i));
    await Promise.all(first);
    await host.onIdle();
    await Promise.all(late);
    // Deciding in the microtask after the first batch would have released [4] alone, then [10, 11, 12].
    expect(sizes).toEqual([4, 4]);
    await host.stop();
  });

  test("also when the model blocks in a setImmediate callback after the batch function returned (onnxruntime-node's way)", async () => {
    const sizes: number[] = [];
    const host = new ModelHost(
      (xs: readonly number[]) =>
        new Promise<readonly number[]>((resolve) => {
          sizes.push(xs.length);
          setImmediate(() => {
            if (sizes.length === 1) block(15);
            resolve(xs);
          });
        }),
      { maxBatchSize: 4 },
    );
    const late: Array<Promise<number>> = [];
    const first = [0, 1, 2, 3, 4].map((i) => host.inference(i));
    // Set after the batch is released (so it cannot join it), due while the model holds the loop.
    setTimeout(() => {
      for (let i = 10; i < 13; i++) late.push(host.inference(i));
    }, 1);
    await Promise.all(first);
    await host.onIdle();
    await Promise.all(late);
    expect(sizes).toEqual([4, 4]);
    await host.stop();
  });

  test('on an injected clock: a batch that advanced the clock by 1 ms or more defers the next release to a 0 ms timer', async () => {
    const clock = new ManualClock();
    const sizes: number[] = [];
    const host = new ModelHost(
      async (xs: readonly number[]) => {
        sizes.push(xs.length);
        if (sizes.length === 1) clock.advance(2); // "blocked" for 2 ms
        return xs;
      },
      { maxBatchSize: 2, clock },
    );
    const all = [1, 2, 3].map((i) => host.inference(i));
    await settle();
    expect(sizes).toEqual([2]);
    await settle();
    expect(sizes).toEqual([2]); // not in the microtask after the blocking batch
    expect(clock.pendingTimers).toBe(1);
    clock.advance(0);
    await settle();
    expect(sizes).toEqual([2, 1]);
    await expect(Promise.all(all)).resolves.toEqual([1, 2, 3]);
    // A batch that did not block (no clock movement) releases the next one at once, as before.
    const more = [4, 5, 6].map((i) => host.inference(i));
    await settle();
    await settle();
    expect(sizes).toEqual([2, 1, 2, 1]);
    await expect(Promise.all(more)).resolves.toEqual([4, 5, 6]);
    await host.stop();
  });
});
