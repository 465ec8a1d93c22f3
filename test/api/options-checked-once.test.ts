import 'reflect-metadata';
import { injectable } from 'tsyringe';
import * as options from '../../src/core/options';
import { batching } from '../../src/api/batching';
import { createHost } from '../../src/api/create-host';
import { ModelHost } from '../../src/engine/model-host';

// Host options (maxBatchSize among them) are checked once per host, by the entry point that got them.

@injectable()
class Doubler {
  @batching({ maxBatchSize: 4 })
  async predictBatch(xs: readonly number[]): Promise<number[]> {
    return xs.map((x) => 2 * x);
  }
}

afterEach(() => jest.restoreAllMocks());

test('createHost checks the options once, and the host it builds does not check them again', async () => {
  const resolve = jest.spyOn(options, 'resolveOptions');
  const host = await createHost(Doubler, { maxDelayMs: 1 });
  try {
    expect(resolve).toHaveBeenCalledTimes(1);
    expect(resolve.mock.calls[0]?.[1]).toMatchObject({ maxBatchSize: 4, maxDelayMs: 1 });
    await expect(host.inference(3)).resolves.toBe(6);
  } finally {
    await host.stop();
  }
});

test('new ModelHost checks its options itself', async () => {
  const resolve = jest.spyOn(options, 'resolveOptions');
  const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 2 });
  expect(resolve).toHaveBeenCalledTimes(1);
  await host.stop();
});
