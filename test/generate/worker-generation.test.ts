import { createGenerationHost } from '../../src/api/create-generation-host';
import { createWorkerGenerationHost } from '../../src/generate/worker-generation';
import generationWorker, { type WorkerStep, type WorkerStepResult } from '../../src/generate/generation.worker';
import { WorkerCrashedError, WorkerStartError } from '../../src/executors/worker/errors';
import { WorkerExecutor } from '../../src/executors/worker/worker-executor';
import { AbortError } from '../../src/core/errors';
import { FATAL, REFUSED } from '../fixtures/workers/decoder-generation.worker';
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

test('a recurrent decoder in a worker: every caller gets greedy decoding alone; only ids and tokens cross; ended sequences are dropped in the worker', async () => {
  const steps: number[] = [];
  const crossing = jest.spyOn(WorkerExecutor.prototype, 'run');
  const host = await createGenerationHost(MODULE, { maxBatchSize: 4, intraOpNumThreads: 1, name: 'rnn', observer: { onStep: (e) => void steps.push(e.sequences) } });
  try {
    const got = await run(host);
    expect(got).toEqual(CALLERS.map((c) => recurrentAlone(c.prompt, c.maxTokens)));
    expect(Math.max(...steps)).toBe(4);
    // The worker held no more states than slots, and lets the ended ones go with the next step.
    expect(host.workerSequences).toBeLessThanOrEqual(4);
    await host.generate([1], { maxTokens: 1 }).collect();
    expect(host.workerSequences).toBe(1); // only the one that just ran (its release rides on the next step)

    // What crossed: to the worker, ids, tokens, positions and each prompt once; back, one token per
    // sequence (and the worker's live count), never scores or states.
    const sent = crossing.mock.calls.map((c) => c[0] as WorkerStep);
    const answers = (await Promise.all(crossing.mock.results.map((r) => r.value as Promise<WorkerStepResult[]>))).flat();
    expect(answers.length).toBe(sent.reduce((n, m) => n + m.steps.length, 0));
    for (const a of answers) {
      expect(a).not.toBeInstanceOf(Error);
      expect(Object.keys(a).sort()).toEqual(['live', 'token']);
    }
    const prompted = new Map<number, number>();
    for (const m of sent) {
      expect(Object.keys(m).sort()).toEqual(['released', 'steps']);
      for (const s of m.steps) {
        expect(Object.keys(s).sort()).toEqual(s.position === 0 ? ['id', 'position', 'prompt', 'token'] : ['id', 'position', 'token']);
        if (s.prompt !== undefined) prompted.set(s.id, (prompted.get(s.id) ?? 0) + 1);
      }
    }
    expect([...prompted.values()]).toEqual(Array.from({ length: CALLERS.length + 1 }, () => 1));
    // Every caller's id was released by the time the last sequence ran.
    const released = new Set(sent.flatMap((m) => m.released));
    expect([...prompted.keys()].filter((id) => !released.has(id))).toHaveLength(1);
  } finally {
    crossing.mockRestore();
    await host.stop();
  }
});

test('a key/value-cache decoder in a worker: the growing caches stay in the worker and every caller gets greedy decoding alone', async () => {
  const host = await createGenerationHost(MODULE, { export: 'kv', maxBatchSize: 3, intraOpNumThreads: 1 });
  try {
    const got = await run(host);
    expect(got).toEqual(CALLERS.map((c) => kvAlone(c.prompt, c.maxTokens)));
  } finally {
    await host.stop();
  }
});

test('an abort mid-stream frees the slot; a factory that throws or makes no model fails the start; functions are refused on this thread', async () => {
  const host = await createGenerationHost(MODULE, { maxBatchSize: 1, intraOpNumThreads: 1 });
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

  // The deprecated createWorkerGenerationHost (createGenerationHost(module) now): its checks, under its own name.
  const failed = (await createWorkerGenerationHost({ module: MODULE, export: 'broken', maxBatchSize: 1 }).catch((e: unknown) => e)) as Error;
  expect(failed).toBeInstanceOf(WorkerStartError);
  expect(failed.message).toContain('the model file is missing');
  const notModel = (await createWorkerGenerationHost({ module: MODULE, export: 'notAModel', maxBatchSize: 1 }).catch((e: unknown) => e)) as Error;
  expect(notModel.message).toContain('should make { step(batch), initialState(prompt), batcher?, choose?, stop? }, got an object');
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, initialState: () => 0 } as never)).rejects.toThrow(
    new TypeError("createWorkerGenerationHost: `initialState` cannot be sent to a worker thread (it is a function); make it in the worker module's factory, which returns { step, initialState, batcher?, choose? }"),
  );
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, choose: () => 0 } as never)).rejects.toThrow(/^createWorkerGenerationHost: `choose` cannot be sent to a worker thread/);
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, batcher: {} } as never)).rejects.toThrow(/^createWorkerGenerationHost: `batcher` cannot be sent to a worker thread/);
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 0 })).rejects.toThrow(new RangeError('createWorkerGenerationHost: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'));
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, intraOpNumThreads: 0 })).rejects.toThrow(new RangeError('createWorkerGenerationHost: expected `intraOpNumThreads` to be an integer from 1 and up, got 0 (number)'));
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, export: '' })).rejects.toThrow(new TypeError('createWorkerGenerationHost: expected `export` to be an export name (a non-empty string), got "" (string)'));
  const missing = (await createWorkerGenerationHost({ module: './no/such.worker', maxBatchSize: 1 }).catch((e: unknown) => e)) as Error;
  expect(missing).toBeInstanceOf(WorkerStartError);
  expect(missing.message).toMatch(/^createWorkerGenerationHost: cannot find the worker module "\.\/no\/such\.worker" \(ids resolve from /);
  await expect(createWorkerGenerationHost({ module: MODULE, maxBatchSize: 1, workers: 2 } as never)).rejects.toThrow(/^createWorkerGenerationHost: unknown option `workers`; the known options are `module`, /);
  await expect(createWorkerGenerationHost({ module: '', maxBatchSize: 1 })).rejects.toThrow(new TypeError('createWorkerGenerationHost: expected `module` to be a module path (a non-empty string), got "" (string)'));
}, 60_000); // three worker starts, each loading onnxruntime: many seconds on a loaded 2-core machine

test("a sequence's own error crosses back as its class; a worker that dies fails the sequences in its step, and new ones start fresh on the replacement", async () => {
  const host = await createGenerationHost(MODULE, { export: 'fragile', maxBatchSize: 4, intraOpNumThreads: 1 });
  try {
    // initialState throws in the worker for one prompt: only that sequence fails.
    const [refused, fine] = await Promise.all([host.generate([REFUSED, 3], { maxTokens: 4 }).collect().catch((e: unknown) => e), host.generate([3, 4], { maxTokens: 6 }).collect()]);
    expect(refused).toBeInstanceOf(RangeError);
    expect((refused as Error).message).toBe(`prompts may not start with ${REFUSED}`);
    expect(fine).toEqual(recurrentAlone([3, 4], 6));

    // The doomed sequence kills the thread at its third step; the one beside it dies with it.
    const tokens: number[] = [];
    const doomed = (async () => {
      for await (const t of host.generate([FATAL], { maxTokens: 50 })) tokens.push(t);
    })();
    const beside = host.generate([2, 5], { maxTokens: 50 }).collect();
    await expect(doomed).rejects.toBeInstanceOf(WorkerCrashedError);
    await expect(beside).rejects.toBeInstanceOf(WorkerCrashedError);
    expect(tokens).toEqual(recurrentAlone([FATAL], 2));
    expect(host.stats.running).toBe(0);

    // The replacement holds nothing of them: new sequences decode from scratch, as alone.
    const again = await Promise.all([host.generate([2, 5], { maxTokens: 5 }).collect(), host.generate([1], { maxTokens: 3 }).collect()]);
    expect(again).toEqual([recurrentAlone([2, 5], 5), recurrentAlone([1], 3)]);
  } finally {
    await host.stop();
  }
});

test('the worker side answers an error for a sequence it holds no state for, rather than decoding it from an empty one', async () => {
  // Run on this thread: the module is what each worker runs, and this case needs a lost state.
  const target = await generationWorker({ workerIndex: 0, workers: 1, intraOpNumThreads: 1, workerData: { module: MODULE, exportName: 'default', data: undefined, where: 'rnn' } });
  try {
    const [lost, fresh] = await target.run({ steps: [{ id: 5, token: 1, position: 3 }, { id: 6, token: 1, position: 0, prompt: [1] }], released: [] });
    expect(lost).toEqual(new Error('rnn: the worker holds no state for this sequence (it was lost with the worker that ran its earlier steps)'));
    expect(fresh).toEqual({ token: recurrentAlone([1], 1)[0], live: 1 });
    const [after] = await target.run({ steps: [{ id: 7, token: 2, position: 0, prompt: [2] }], released: [6] });
    expect(after).toEqual({ token: recurrentAlone([2], 1)[0], live: 1 });
  } finally {
    await target.stop?.();
  }
});
