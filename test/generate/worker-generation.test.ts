import { createWorkerGenerationHost } from '../../src/generate/worker-generation';
import { WorkerStartError } from '../../src/executors/worker/errors';
import { AbortError } from '../../src/core/errors';
import { kvAlone, recurrentAlone } from '../support/greedy-alone';
import { waitFor } from '../support/wait-for';

// Generation with the decode steps in a worker thread: the states stay there, only token ids
// cross. Callers of different prompts and lengths, arriving at different times, get what greedy
// decoding alone gives.

const MODULE = require.resolve('../fixtures/workers/decoder-generation.worker');

const CALLERS = Array.from({ length: 8 }, (_, i) => ({ prompt: Array.from({ length: 1 + (i % 3) }, (_, k) => (i * 3 + k * 5) % 16), maxTokens: 3 + ((i * 5) % 9), delay: i % 3 }));

async function run(host: { generate(p: readonly number[], o: { maxTokens: number }): { collect(): Promise<number[]> } }): Promise<number[][]> {
  return Promise.all(
    CALLERS.map(async (c) => {
      for (let t = 0; t < c.delay; t++) await new Promise((r) => setImmediate(r));
      return host.generate(c.prompt, { maxTokens: c.maxTokens }).collect();
    }),
  );
}

test('a recurrent decoder in a worker: every caller gets greedy decoding alone; ended sequences are dropped in the worker', async () => {
  const steps: number[] = [];
  const host = await createWorkerGenerationHost({ module: MODULE, maxBatchSize: 4, intraOpNumThreads: 1, name: 'rnn', observer: { onStep: (e) => void steps.push(e.sequences) } });
  try {
    const got = await run(host);
    expect(got).toEqual(CALLERS.map((c) => recurrentAlone(c.prompt, c.maxTokens)));
    expect(Math.max(...steps)).toBe(4);
    // The worker held no more states than slots, and lets the ended ones go with the next step.
    expect(host.workerSequences).toBeLessThanOrEqual(4);
    await host.generate([1], { maxTokens: 1 }).collect();
    expect(host.workerSequences).toBe(1); // only the one that just ran (its release rides on the next step)
  } finally {
    await host.stop();
  }
});

test('a key/value-cache decoder in a worker: the growing caches stay in the worker and every caller gets greedy decoding alone', async () => {
  const host = await createWorkerGenerationHost({ module: MODULE, export: 'kv', maxBatchSize: 3, intraOpNumThreads: 1 });
  try {
    const got = await run(host);
    expect(got).toEqual(CALLERS.map((c) => kvAlone(c.prompt, c.maxTokens)));
  } finally {
    await host.stop();
  }
});

test('an abort mid-stream frees the slot; a factory that throws or makes no model fails the start; functions are refused on this thread', async () => {
  const host = await createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, intraOpNumThreads: 1 });
  try {
    const ac = new AbortController();
    const first = host.generate([2], { maxTokens: 200, signal: ac.signal });
    const tokens: number[] = [];
    const reading = (async () => {
      for await (const t of first) {
        tokens.push(t);
        if (tokens.length === 3) ac.abort();
      }
    })();
    await expect(reading).rejects.toBeInstanceOf(AbortError);
    expect(tokens.length).toBeGreaterThanOrEqual(3);
    expect(await host.generate([4], { maxTokens: 2 }).collect()).toHaveLength(2);
    await waitFor(() => host.stats.sequences.aborted === 1, 5_000, 'the abort counted');
  } finally {
    await host.stop();
  }

  const failed = (await createWorkerGenerationHost({ module: MODULE, export: 'broken', maxBatchSize: 1 }).catch((e: unknown) => e)) as Error;
  expect(failed).toBeInstanceOf(WorkerStartError);
  expect(failed.message).toContain('the model file is missing');
  const notModel = (await createWorkerGenerationHost({ module: MODULE, export: 'notAModel', maxBatchSize: 1 }).catch((e: unknown) => e)) as Error;
  expect(notModel.message).toContain('should make { step(batch), initialState(prompt), batcher?, choose?, stop? }, got an object');
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, initialState: () => 0 } as never)).rejects.toThrow(
    new TypeError("createWorkerGenerationHost: `initialState` cannot be sent to a worker thread (it is a function); make it in the worker module's factory, which returns { step, initialState, batcher?, choose? }"),
  );
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, workers: 2 } as never)).rejects.toThrow(/^createWorkerGenerationHost: unknown option `workers`; the known options are `module`, /);
  await expect(createWorkerGenerationHost({ module: '', maxBatchSize: 1 })).rejects.toThrow(new TypeError('createWorkerGenerationHost: expected `module` to be a module path (a non-empty string), got "" (string)'));
});
