/**
 * Type-level tests of `createHost(C, { executor: <executor object> })`, checked by `tsc`: the
 * executor's batch and result types follow the hosted method (or the batcher), while the host's
 * `inference()` types are the same as with any other executor. Never called: see decorator.test.ts.
 */
import 'reflect-metadata';
import { expectTypeOf } from 'expect-type';
import { batching } from '../../src/api/batching';
import { createHost, type HostedModel } from '../../src/api/create-host';
import type { Batcher } from '../../src/core/batcher';
import { WorkerExecutor } from '../../src/executors/worker';

class Lengths {
  @batching(32)
  async predictBatch(texts: readonly string[]): Promise<Array<number | Error>> {
    return texts.map((t) => t.length);
  }
  @batching(8)
  async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map(() => new Float32Array(4));
  }
}

declare const joined: Batcher<string, number, string, number[], number>;

export async function executorTypes(): Promise<void> {
  const host = await createHost(Lengths, {
    executor: {
      concurrency: 2,
      run: (batch) => {
        expectTypeOf(batch).toEqualTypeOf<readonly string[]>();
        return batch.map((t) => t.length);
      },
    },
  });
  expectTypeOf(host).toEqualTypeOf<HostedModel<string, number, readonly string[], Array<number | Error>>>();

  const embed = await createHost(Lengths, { method: 'embedBatch', executor: { run: async (batch) => batch.map(() => new Float32Array(4)) } });
  expectTypeOf(embed.inference('x')).toEqualTypeOf<Promise<Float32Array>>();

  // With a batcher, the executor receives the batcher's batch.
  const merged = await createHost(Lengths, {
    batcher: joined,
    executor: {
      run: (batch) => {
        expectTypeOf(batch).toEqualTypeOf<string>();
        return [batch.length];
      },
    },
  });
  expectTypeOf(merged).toEqualTypeOf<HostedModel<string, number, string, number[]>>();

  const pool = new WorkerExecutor<readonly string[], number[]>({ module: './lengths.worker' });
  void createHost(Lengths, { executor: pool, stopExecutor: false });

  // @ts-expect-error -- the pool takes number batches, the method string batches
  void createHost(Lengths, { executor: { run: (batch: readonly number[]) => [...batch] } });
  // @ts-expect-error -- the pool answers strings, the method numbers
  void createHost(Lengths, { executor: { run: (batch: readonly string[]) => [...batch] } });
  // @ts-expect-error -- concurrency is a number
  void createHost(Lengths, { executor: { run: (batch) => batch.map(() => 1), concurrency: '2' } });
  // @ts-expect-error -- stopExecutor is a boolean
  void createHost(Lengths, { executor: pool, stopExecutor: 'no' });
}

test('the type checks above compile (tsc runs them; see the file comment)', () => {
  expect(typeof executorTypes).toBe('function');
});
