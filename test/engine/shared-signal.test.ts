import { getEventListeners } from 'node:events';
import { AbortError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import { ModelHost } from '../../src/engine/model-host';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput, StepOutput } from '../../src/generate/options';
import type { TokenStream } from '../../src/generate/token-stream';
import { PendingCalls } from '../../src/remote/pending-calls';
import { ControlledModel, settle, track } from '../support/controlled-model';

// One long-lived AbortSignal (a server-wide shutdown signal) shared by many concurrent calls: it
// holds one abort listener however many calls watch it (no MaxListenersExceededWarning past 10),
// none once they have settled, and still ends every call still watching when it aborts.

const N = 200;
const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

let warnings: Error[] = [];
const onWarning = (w: Error): void => {
  warnings.push(w);
};
beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

/** Lets a warning emitted with process.emitWarning (on nextTick) reach the listener. */
const warningsSoFar = async (): Promise<Error[]> => {
  await settle();
  return warnings;
};

function modelHost(cache: boolean) {
  const clock = new ManualClock();
  const model = new ControlledModel<number, number>();
  const host = new ModelHost<number, number>(model.fn, { maxBatchSize: 4, clock, cache });
  /** Answers the model calls still running, then stops the host. */
  const stop = async (): Promise<void> => {
    for (const c of model.calls) c.resolve(c.items.map((x) => x));
    await host.stop({ drain: false });
  };
  return { model, host, stop };
}

describe.each([false, true])('ModelHost (cache: %s): %i calls sharing one signal', (cache) => {
  test('settled calls leave no listener, and no warning is raised', async () => {
    const { model, host, stop } = modelHost(cache);
    const ac = new AbortController();
    const calls = Array.from({ length: N }, (_, i) => track(host.inference(i, { signal: ac.signal })));
    await settle();
    expect(listeners(ac.signal)).toBe(1);
    while (calls.some((c) => c.state === 'pending')) {
      for (let i = 0; i < model.calls.length; i++) model.answer(i, (x) => x * 2);
      model.calls.length = 0;
      await settle();
    }
    expect(calls.map((c) => c.value)).toEqual(Array.from({ length: N }, (_, i) => i * 2));
    expect(listeners(ac.signal)).toBe(0);
    expect(await warningsSoFar()).toEqual([]);
    await stop();
  });

  test('an abort ends every call still waiting or running, each with AbortError', async () => {
    const { host, stop } = modelHost(cache);
    const ac = new AbortController();
    const calls = Array.from({ length: N }, (_, i) => track(host.inference(i, { signal: ac.signal })));
    await settle();
    ac.abort(new Error('shutting down'));
    await settle();
    expect(calls.every((c) => c.state === 'rejected' && c.error instanceof AbortError)).toBe(true);
    expect(listeners(ac.signal)).toBe(0);
    expect(await warningsSoFar()).toEqual([]);
    await stop();
  });
});

describe('the response cache: callers sharing one computation and one signal', () => {
  test('one listener for every waiting caller; an abort ends them all; none left after', async () => {
    const { host, stop } = modelHost(true);
    const ac = new AbortController();
    // Identical inputs: one computation, N waiting callers on the cache's side.
    const calls = Array.from({ length: N }, () => track(host.inference(7, { signal: ac.signal })));
    await settle();
    expect(listeners(ac.signal)).toBe(1);
    ac.abort();
    await settle();
    expect(calls.every((c) => c.state === 'rejected' && c.error instanceof AbortError)).toBe(true);
    expect(listeners(ac.signal)).toBe(0);
    expect(await warningsSoFar()).toEqual([]);
    await stop();
  });
});

type In = StepInput<number>;
type Out = StepOutput<number>;

describe('GenerationHost: sequences sharing one signal', () => {
  /** How a stream ends: read to its end in the background. */
  const ending = (stream: TokenStream) =>
    track(
      (async () => {
        for await (const _ of stream);
      })(),
    );

  test('ended sequences leave no listener; an abort ends the rest; no warning', async () => {
    const model = new ControlledModel<In, Out>();
    const host = new GenerationHost<number>(model.fn, { maxBatchSize: 4, initialState: () => 0, clock: new ManualClock() });
    const ac = new AbortController();
    const streams = Array.from({ length: N }, (_, i) => ending(host.generate([i], { maxTokens: 1, signal: ac.signal })));
    await settle();
    expect(listeners(ac.signal)).toBe(1);
    // Two steps: the first four sequences produce their one token and end.
    model.answer(0, (x) => ({ token: x.token + 1, state: x.state }));
    await settle();
    expect(streams.slice(0, 4).every((s) => s.state === 'resolved')).toBe(true);
    expect(listeners(ac.signal)).toBe(1);
    ac.abort();
    await settle();
    expect(streams.slice(4).every((s) => s.state === 'rejected' && s.error instanceof AbortError)).toBe(true);
    expect(listeners(ac.signal)).toBe(0);
    expect(await warningsSoFar()).toEqual([]);
    for (const c of model.calls) c.resolve(c.items.map((x) => ({ token: x.token, state: x.state })));
    await host.stop({ drain: false });
  });
});

describe("the remote clients' PendingCalls: calls sharing one signal", () => {
  const options = (signal: AbortSignal, gaveUp: number[], id: number) => ({
    timeoutMs: Infinity,
    signal,
    timeoutError: (elapsedMs: number) => new Error(`timeout after ${elapsedMs} ms`),
    abortError: (reason: unknown) => new AbortError(`aborted: ${String(reason)}`, reason),
    onGiveUp: () => gaveUp.push(id),
  });

  test('answered calls leave no listener; an abort ends the rest and each is taken back; no warning', async () => {
    const pending = new PendingCalls<number>();
    const ac = new AbortController();
    const gaveUp: number[] = [];
    const calls = Array.from({ length: N }, (_, id) => track(pending.add<number>(id, options(ac.signal, gaveUp, id))));
    expect(listeners(ac.signal)).toBe(1);
    for (let id = 0; id < N / 2; id++) pending.settle(id, undefined, id);
    expect(listeners(ac.signal)).toBe(1);
    ac.abort('bye');
    await settle();
    expect(calls.slice(0, N / 2).map((c) => c.value)).toEqual(Array.from({ length: N / 2 }, (_, i) => i));
    expect(calls.slice(N / 2).every((c) => c.state === 'rejected' && c.error instanceof AbortError)).toBe(true);
    expect(gaveUp).toEqual(Array.from({ length: N / 2 }, (_, i) => N / 2 + i));
    expect(pending.size).toBe(0);
    expect(listeners(ac.signal)).toBe(0);
    expect(await warningsSoFar()).toEqual([]);
  });

  test('all answered: the signal holds no listener and a later abort does nothing', async () => {
    const pending = new PendingCalls<number>();
    const ac = new AbortController();
    const gaveUp: number[] = [];
    const calls = Array.from({ length: N }, (_, id) => track(pending.add<number>(id, options(ac.signal, gaveUp, id))));
    for (let id = 0; id < N; id++) pending.settle(id, undefined, id);
    expect(listeners(ac.signal)).toBe(0);
    ac.abort();
    await settle();
    expect(calls.every((c) => c.state === 'resolved')).toBe(true);
    expect(gaveUp).toEqual([]);
    expect(await warningsSoFar()).toEqual([]);
  });
});
