import { deriveOptions, isResolved, resolveOptions } from '../../src/core/options';
import { ListBatcher } from '../../src/batchers/list-batcher';

// deriveOptions: what an entry point works out itself (a worker count, a name, a batcher) is a
// default under the caller's options, or an override over them, and is checked like them.

test("an entry point's defaults apply where the caller gave none, and the caller's values win", () => {
  const bare = resolveOptions('w', { maxBatchSize: 4 });
  const derived = deriveOptions('w', bare, { maxConcurrentBatches: 3, name: 'model' });
  expect(derived).toMatchObject({ maxBatchSize: 4, maxConcurrentBatches: 3, name: 'model' });
  expect(isResolved(derived)).toBe(true);

  const given = resolveOptions('w', { maxBatchSize: 4, maxConcurrentBatches: 2, name: 'mine' });
  expect(deriveOptions('w', given, { maxConcurrentBatches: 3, name: 'model' })).toMatchObject({ maxConcurrentBatches: 2, name: 'mine' });
});

test('overrides apply over what the caller gave; undefined values are no values', () => {
  const given = resolveOptions('w', { maxBatchSize: 4, batchTimeoutMs: 100 });
  expect(deriveOptions('w', given, { maxConcurrentBatches: undefined }, { batchTimeoutMs: Infinity })).toMatchObject({ maxConcurrentBatches: 1, batchTimeoutMs: Infinity });
  const batcher = new ListBatcher();
  expect(deriveOptions('w', given, { batcher }).batcher).toBe(batcher);
});

test('derived values are checked like the caller’s, with the same messages', () => {
  const o = resolveOptions('w', { maxBatchSize: 4 });
  expect(() => deriveOptions('w', o, { maxConcurrentBatches: 0 })).toThrow(new RangeError('w: expected `maxConcurrentBatches` to be an integer from 1 and up, got 0 (number)'));
  expect(() => deriveOptions('w', o, { warmup: { samples: [1], batchSizes: [8] } })).toThrow(RangeError);
  expect(() => deriveOptions('w', { ...o }, {})).toThrow(new TypeError('w: deriveOptions takes the options that resolveOptions returned'));
});
