import { ModelHost } from '../../src/engine/model-host';
import { LatencyModel } from '../../src/core/latency-model';
import { ManualClock } from '../../src/core/manual-clock';
import { ControlledModel, settle } from '../support/controlled-model';

describe("policy: 'adaptive'", () => {
  test('gives each host its own learning policy, exposed as host.latencyModel', async () => {
    const clock = new ManualClock();
    const model = new ControlledModel<number, number>();
    const a = new ModelHost(model.fn, { maxBatchSize: 8, policy: 'adaptive', maxLatencyMs: 100, clock });
    const b = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 8, policy: 'adaptive' });
    const greedy = new ModelHost(async (xs: readonly number[]) => xs, 8);
    expect(a.latencyModel).toBeDefined();
    expect(a.latencyModel).not.toBe(b.latencyModel);
    expect(greedy.latencyModel).toBeUndefined();
    expect(a.latencyModel?.predict(4)).toBeUndefined(); // nothing learned yet

    const p = a.inference(1); // a lone request at idle is not delayed
    await settle();
    expect(model.sizes).toEqual([1]);
    clock.advance(6);
    model.answer(0, (x) => x + 1);
    await expect(p).resolves.toBe(2);
    await settle();
    expect(a.latencyModel?.predict(1)).toBeCloseTo(6, 5);
    await Promise.all([a.stop(), b.stop(), greedy.stop()]);
  });

  test('learns through a LatencyModel', async () => {
    const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 4, policy: 'adaptive' });
    expect(host.latencyModel).toBeInstanceOf(LatencyModel);
    await host.stop();
  });
});
