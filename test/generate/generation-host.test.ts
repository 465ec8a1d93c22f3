import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput, StepOutput } from '../../src/generate/options';
import type { SequenceEvent, StepEvent } from '../../src/generate/events';
import { ManualClock } from '../../src/core/manual-clock';
import { AbortError, BatchSizeMismatchError, DeadlineExceededError, HostStoppedError, QueueFullError } from '../../src/core/errors';
import { ControlledModel, settle } from '../support/controlled-model';
import type { TokenStream } from '../../src/generate/token-stream';

// The step scheduler on a hand-driven step function and a manual clock: who is in each step, when
// a prompt joins, when a sequence leaves, and how each stream ends.

type In = StepInput<number>;
type Out = StepOutput<number>;

/** A step that emits token + 1 and counts steps in the state. */
const next = (x: In): Out => ({ token: x.token + 1, state: x.state + 1 });

function setup(options: Partial<ConstructorParameters<typeof GenerationHost<number>>[1]> = {}) {
  const model = new ControlledModel<In, Out>();
  const clock = new ManualClock();
  const steps: StepEvent[] = [];
  const sequences: SequenceEvent[] = [];
  const host = new GenerationHost<number>(model.fn, {
    maxBatchSize: 4,
    initialState: () => 0,
    clock,
    observer: { onStep: (e) => steps.push(e), onSequence: (e) => sequences.push(e) },
    ...options,
  });
  /** The tokens in each call so far: which sequences shared each step. */
  const tokens = () => model.calls.map((c) => c.items.map((i) => i.token));
  /** Answers the newest step with `map` and lets the loop go on. */
  const step = async (map: (x: In) => Out | Error = next) => {
    model.answer(model.calls.length - 1, map);
    await settle();
  };
  return { model, clock, host, steps, sequences, tokens, step };
}

/** Reads a stream in the background: its tokens so far, and how it ended. */
function reader(stream: TokenStream) {
  const box: { tokens: number[]; done: boolean; error?: Error } = { tokens: [], done: false };
  void (async () => {
    try {
      for await (const t of stream) box.tokens.push(t);
      box.done = true;
    } catch (e) {
      box.error = e as Error;
    }
  })();
  return box;
}

describe('continuous batching: sequences join at the next step and leave at once', () => {
  test('a prompt that arrives mid-generation joins the next step; the one that finishes leaves and its stream ends; the other goes on alone', async () => {
    const { host, tokens, step, model } = setup();
    const a = reader(host.generate([10], { maxTokens: 3 }));
    await settle();
    expect(tokens()).toEqual([[10]]);
    const b = reader(host.generate([20], { maxTokens: 4 })); // arrives while a's first step runs
    await step();
    expect(tokens()).toEqual([[10], [11, 20]]); // b joined at the next step
    await step();
    await step();
    expect(a).toEqual({ tokens: [11, 12, 13], done: true }); // a ended after its third token
    expect(tokens().at(-1)).toEqual([22]); // b alone
    await step();
    await step();
    expect(b).toEqual({ tokens: [21, 22, 23, 24], done: true });
    expect(model.calls).toHaveLength(5);
    await host.onIdle();
    expect(host.stats).toMatchObject({ waiting: 0, running: 0, steps: 5, rows: 7, tokens: 7, sequences: { length: 2 } });
  });

  test('a prompt is read one token per step; only the output of its last token is a generated token', async () => {
    const { host, tokens, step, model } = setup();
    const a = reader(host.generate([5, 6, 7], { maxTokens: 2 }));
    await settle();
    for (let i = 0; i < 4; i++) await step();
    expect(tokens()).toEqual([[5], [6], [7], [8]]);
    expect(model.calls.map((c) => c.items[0]!.position)).toEqual([0, 1, 2, 3]);
    expect(model.calls.map((c) => c.items[0]!.state)).toEqual([0, 1, 2, 3]); // the state threads through
    expect(a).toEqual({ tokens: [8, 9], done: true });
  });

  test('logits are turned into tokens by greedy choice, or by the host\'s choose', async () => {
    const logits = (x: In): Out => ({ logits: [0, 0.5, 0.2, 0.5].map((v, i) => (i === x.token % 4 ? 9 : v)), state: 0 });
    const greedy = setup();
    const g = reader(greedy.host.generate([2], { maxTokens: 1 }));
    await settle();
    await greedy.step(logits);
    expect(g.tokens).toEqual([2]);
    const chosen = setup({ choose: (l) => l.length - 1 });
    const c = reader(chosen.host.generate([2], { maxTokens: 1 }));
    await settle();
    await chosen.step(logits);
    expect(c.tokens).toEqual([3]);
    const ties = setup();
    const t = reader(ties.host.generate([2], { maxTokens: 1 }));
    await settle();
    await ties.step(() => ({ logits: [0, 0.5, 0.2, 0.5], state: 0 }));
    expect(t.tokens).toEqual([1]); // the lowest index on ties
  });

  test('a stop token ends the sequence and is delivered; per-call stopTokens replace the host\'s', async () => {
    const { host, step } = setup({ stopTokens: [13] });
    const a = host.generate([10]);
    const b = host.generate([10], { stopTokens: [12] });
    const ra = reader(a);
    const rb = reader(b);
    await settle();
    for (let i = 0; i < 3; i++) await step();
    expect(rb).toEqual({ tokens: [11, 12], done: true });
    expect(ra).toEqual({ tokens: [11, 12, 13], done: true });
    expect([a.finishReason, b.finishReason]).toEqual(['stop', 'stop']);
  });

  test('maxBatchSize slots: a prompt waits for a free slot, higher priority first, arrival order within a priority', async () => {
    const { host, tokens, step } = setup({ maxBatchSize: 2 });
    reader(host.generate([100], { maxTokens: 1 }));
    reader(host.generate([200], { maxTokens: 3 }));
    await settle(); // both admitted: prompts of one tick are admitted by priority, so the rest come after
    reader(host.generate([300], { maxTokens: 1 }));
    reader(host.generate([400], { maxTokens: 1, priority: 1 }));
    reader(host.generate([500], { maxTokens: 1 }));
    await settle();
    expect(host.stats).toMatchObject({ running: 2, waiting: 3 });
    await step();
    expect(tokens()).toEqual([[100, 200], [201, 400]]); // 100 left after one token; 400 outranks 300
    await step();
    expect(tokens().at(-1)).toEqual([202, 300]);
    await step();
    expect(tokens().at(-1)).toEqual([500]);
    await step();
    await host.onIdle();
    expect(host.stats.sequences.length).toBe(5);
  });
});

describe('prefill: whole prompts in one call', () => {
  /** A prefill that answers the token after each prompt's last, and the prompt's length as state. */
  const prefillModel = () => new ControlledModel<{ prompt: readonly number[]; state: number }, Out>();
  const fromPrefill = (x: { prompt: readonly number[]; state: number }): Out => ({ token: (x.prompt.at(-1) as number) + 1, state: x.prompt.length });

  test('prompts that join together are prefilled in one call; each gets its first token from it, and the decode steps never see prompt tokens', async () => {
    const pre = prefillModel();
    const { host, tokens, step, steps, model } = setup({ prefill: pre.fn });
    const a = reader(host.generate([1, 2, 3], { maxTokens: 3 }));
    const b = reader(host.generate([7], { maxTokens: 2 }));
    await settle();
    expect(pre.calls.map((c) => c.items.map((i) => i.prompt))).toEqual([[[1, 2, 3], [7]]]);
    expect(model.calls).toHaveLength(0);
    pre.answer(0, fromPrefill);
    await settle();
    expect([a.tokens, b.tokens]).toEqual([[4], [8]]); // delivered before any decode step
    expect(tokens()).toEqual([[4, 8]]);
    expect(model.calls[0]!.items.map((i) => [i.position, i.state])).toEqual([
      [3, 3],
      [1, 1],
    ]);
    await step();
    expect(b).toEqual({ tokens: [8, 9], done: true });
    await step();
    expect(a).toEqual({ tokens: [4, 5, 6], done: true });
    expect(steps.map((e) => [e.prefill, e.sequences, e.joined, e.prefilling, e.tokens])).toEqual([
      [true, 2, 2, 2, 2],
      [false, 2, 0, 0, 2],
      [false, 1, 0, 0, 1],
    ]);
  });

  test('a prompt that arrives mid-generation is prefilled, then joins the decode step of the same iteration', async () => {
    const pre = prefillModel();
    const { host, tokens, step } = setup({ prefill: pre.fn });
    reader(host.generate([10], { maxTokens: 4 }));
    await settle();
    pre.answer(0, fromPrefill);
    await settle();
    const late = reader(host.generate([20, 21], { maxTokens: 2 }));
    await step(); // the running one's step; the late one waits for the next iteration
    expect(pre.calls).toHaveLength(2);
    pre.answer(1, fromPrefill);
    await settle();
    expect(late.tokens).toEqual([22]);
    expect(tokens().at(-1)).toEqual([12, 22]);
  });

  test('a prefill error ends its sequence alone; a prefill that throws ends the sequences it had; maxTokens 1 ends at the prefill', async () => {
    const pre = prefillModel();
    const { host, model } = setup({ prefill: pre.fn });
    const bad = reader(host.generate([5]));
    const once = reader(host.generate([6], { maxTokens: 1 }));
    await settle();
    pre.answer(0, (x) => (x.prompt[0] === 5 ? new Error('prompt too long') : fromPrefill(x)));
    await settle();
    expect(bad.error?.message).toBe('prompt too long');
    expect(once).toEqual({ tokens: [7], done: true });
    expect(model.calls).toHaveLength(0); // nobody left to decode
    const thrown = reader(host.generate([1]));
    await settle();
    pre.last.reject(new Error('prefill crashed'));
    await settle();
    expect(thrown.error?.message).toBe('prefill crashed');
    expect(() => new GenerationHost(async () => [], { maxBatchSize: 1, initialState: () => 0, prefill: 3 as never })).toThrow(
      new TypeError('GenerationHost: expected `prefill` to be a function (prompts) => outputs, got 3 (number)'),
    );
  });
});

describe('cancellation, deadlines and refusals', () => {
  test('an abort mid-stream ends the iteration with AbortError after the tokens delivered, and frees the slot at the next step', async () => {
    const { host, tokens, step } = setup({ maxBatchSize: 1 });
    const ac = new AbortController();
    const a = reader(host.generate([10], { signal: ac.signal }));
    const b = reader(host.generate([20], { maxTokens: 1 }));
    await settle();
    await step();
    ac.abort(new Error('user left'));
    await settle();
    expect(a.tokens).toEqual([11]);
    expect(a.error).toBeInstanceOf(AbortError);
    expect(a.error!.message).toBe('generation: aborted after 1 tokens; its slot is freed at the next step');
    expect((a.error!.cause as Error).message).toBe('user left');
    await step(); // the step that was running when it aborted: its output is dropped
    expect(tokens()).toEqual([[10], [11], [20]]);
    await step();
    expect(b).toEqual({ tokens: [21], done: true });
  });

  test('an abort while waiting leaves the queue; a signal aborted already refuses at once', async () => {
    const { host, step } = setup({ maxBatchSize: 1 });
    reader(host.generate([10], { maxTokens: 1 }));
    const ac = new AbortController();
    const w = reader(host.generate([20], { signal: ac.signal }));
    await settle();
    ac.abort();
    await settle();
    expect(w.error?.message).toBe('generation: aborted while waiting for a slot');
    expect(host.stats.waiting).toBe(0);
    const pre = reader(host.generate([30], { signal: AbortSignal.abort() }));
    await settle();
    expect(pre.error).toBeInstanceOf(AbortError);
    await step();
    await host.onIdle();
    expect(host.stats.sequences).toMatchObject({ aborted: 2, length: 1 });
  });

  test('leaving the loop early (break) cancels the sequence: its slot is freed at the next step', async () => {
    const { host, tokens, step } = setup({ maxBatchSize: 1 });
    const stream = host.generate([10]);
    const b = reader(host.generate([20], { maxTokens: 1 }));
    const got: number[] = [];
    const loop = (async () => {
      for await (const t of stream) {
        got.push(t);
        if (got.length === 2) break;
      }
    })();
    await settle();
    await step();
    await step();
    await loop;
    expect(stream.finishReason).toBe('cancelled');
    await step();
    expect(tokens()).toEqual([[10], [11], [12], [20]]);
    await step();
    expect(b.tokens).toEqual([21]);
    expect(host.stats.sequences).toMatchObject({ cancelled: 1, length: 1 });
  });

  test('timeoutMs: a prompt still waiting fails as queued; a running sequence ends as running after its tokens', async () => {
    const { host, clock, step } = setup({ maxBatchSize: 1 });
    const a = reader(host.generate([10], { timeoutMs: 50 }));
    const b = reader(host.generate([20], { timeoutMs: 30 }));
    await settle();
    await step();
    clock.advance(30);
    await settle();
    expect(b.error).toBeInstanceOf(DeadlineExceededError);
    expect(b.error).toMatchObject({ reason: 'timeout', phase: 'queued', message: 'generation: timed out after 30 ms waiting for a slot (timeoutMs 30); it never ran' });
    clock.advance(20);
    await settle();
    expect(a.tokens).toEqual([11]);
    expect(a.error).toMatchObject({ phase: 'running', message: 'generation: timed out after 50 ms (timeoutMs 50) with 1 tokens generated; its slot is freed at the next step' });
    await step();
    await host.onIdle();
    expect(host.stats.sequences.timeout).toBe(2);
  });

  test('maxQueueSize: a prompt past it fails with QueueFullError; nothing else is disturbed', async () => {
    const { host, step } = setup({ maxBatchSize: 1, maxQueueSize: 1 });
    const a = reader(host.generate([10], { maxTokens: 1 }));
    await settle(); // a runs
    reader(host.generate([20], { maxTokens: 1 })); // waits
    const c = reader(host.generate([30], { maxTokens: 1 }));
    await settle();
    expect(c.error).toBeInstanceOf(QueueFullError);
    expect(c.error!.message).toBe('generation: the queue is full (maxQueueSize is 1 waiting requests); the request was refused without being queued. Retry later or raise maxQueueSize.');
    await step();
    await step();
    expect(a.tokens).toEqual([11]);
    expect(host.stats.sequences).toMatchObject({ 'queue-full': 1, length: 2 });
  });
});

describe('failures', () => {
  test('a step that throws ends every sequence in it with the error; the host takes new prompts', async () => {
    const { host, model, step } = setup();
    const a = reader(host.generate([10]));
    const b = reader(host.generate([20]));
    await settle();
    await step();
    model.last.reject(new Error('out of memory'));
    await settle();
    expect([a.tokens, b.tokens]).toEqual([[11], [21]]);
    expect([a.error?.message, b.error?.message]).toEqual(['out of memory', 'out of memory']);
    const c = reader(host.generate([30], { maxTokens: 1 }));
    await settle();
    await step();
    expect(c).toEqual({ tokens: [31], done: true });
  });

  test('a step that returns the wrong count fails its sequences with BatchSizeMismatchError; a bad output fails its sequence alone', async () => {
    const { host, model, step } = setup();
    const a = reader(host.generate([10]));
    await settle();
    model.last.resolve([]);
    await settle();
    expect(a.error).toBeInstanceOf(BatchSizeMismatchError);
    const b = reader(host.generate([20], { maxTokens: 2 }));
    const c = reader(host.generate([30], { maxTokens: 2 }));
    await settle();
    await step((x) => (x.token === 20 ? ({ state: 0 } as Out) : next(x)));
    expect(b.error).toEqual(new TypeError("generation: the step's output for a sequence has neither `token` nor `logits` (scores over the vocabulary)"));
    await step((x) => ({ token: -1, state: x.state }));
    expect(c.error).toEqual(new TypeError("generation: the step's output for a sequence: expected a token id (an integer from 0 up), got -1 (number)"));
    expect(c.tokens).toEqual([31]);
  });

  test('releaseState gets each started sequence\'s last state once, whichever way it ended; never one that did not start', async () => {
    const released: number[] = [];
    const { host, step } = setup({ maxBatchSize: 2, releaseState: (s) => void released.push(s) });
    const ac = new AbortController();
    reader(host.generate([10], { maxTokens: 2 }));
    reader(host.generate([20], { signal: ac.signal }));
    const waiting = reader(host.generate([30], { signal: AbortSignal.abort() }));
    await settle();
    await step();
    ac.abort();
    await settle();
    expect(released).toEqual([1]); // the aborted one, with the state after its one step
    await step();
    expect(released).toEqual([1, 2]); // the other, after its last step
    expect(waiting.error).toBeInstanceOf(AbortError);
  });

  test('initialState that throws fails that prompt alone', async () => {
    const { host, tokens } = setup({ initialState: (p) => (p[0] === 66 ? (() => { throw new Error('no state for 66'); })() : 0) });
    const bad = reader(host.generate([66]));
    reader(host.generate([10]));
    await settle();
    expect(bad.error?.message).toBe('no state for 66');
    expect(tokens()).toEqual([[10]]);
  });
});

describe('lifecycle and reports', () => {
  test('stop() drains what runs and waits, then refuses; stop({ drain: false }) ends them with HostStoppedError', async () => {
    const { host, step } = setup({ maxBatchSize: 1 });
    const a = reader(host.generate([10], { maxTokens: 1 }));
    const b = reader(host.generate([20], { maxTokens: 1 }));
    await settle();
    const stopped = host.stop();
    const late = reader(host.generate([30]));
    await settle();
    expect(late.error).toBeInstanceOf(HostStoppedError);
    await step();
    await step();
    await stopped;
    expect([a.tokens, b.tokens]).toEqual([[11], [21]]);

    const other = setup();
    const c = reader(other.host.generate([10]));
    await settle();
    await other.step();
    const hard = other.host.stop({ drain: false });
    await settle();
    expect(c.tokens).toEqual([11]);
    expect(c.error).toEqual(new HostStoppedError('generation: the host was stopped before this sequence finished'));
    await other.step(); // the step in flight ends; nothing follows it
    await hard;
    expect(other.model.calls).toHaveLength(2);

    // A draining stop, then one that does not drain: the second ends what the first waited for.
    const third = setup();
    const d = reader(third.host.generate([10]));
    await settle();
    const draining = third.host.stop();
    const again = third.host.stop({ drain: false });
    expect(again).toBe(draining);
    await settle();
    expect(d.error).toBeInstanceOf(HostStoppedError);
    await third.step();
    await draining;
  });

  test('observer: a step report per step, and per sequence its time to first token and tokens per second on the host clock', async () => {
    const { host, clock, step, steps, sequences } = setup();
    reader(host.generate([1, 2], { maxTokens: 3 }));
    await settle();
    clock.advance(10);
    await step(); // reads prompt token 1
    clock.advance(10);
    await step(); // first token at t = 20
    clock.advance(5);
    await step();
    clock.advance(5);
    await step(); // third token at t = 30
    expect(steps.map((e) => [e.sequences, e.joined, e.prefilling, e.tokens, e.finished])).toEqual([
      [1, 1, 1, 0, 0],
      [1, 0, 0, 1, 0],
      [1, 0, 0, 1, 0],
      [1, 0, 0, 1, 1],
    ]);
    expect(steps[0]!.runMs).toBe(10);
    expect(sequences).toEqual([
      { host: 'generation', outcome: 'length', promptTokens: 2, tokens: 3, queueMs: 0, timeToFirstTokenMs: 20, totalMs: 30, tokensPerSecond: 200 },
    ]);
  });

  test('bad arguments fail the stream with a message that says what was expected; bad options fail the constructor', async () => {
    const { host, step } = setup();
    const errorOf = async (s: TokenStream) => s.collect().then(() => undefined, (e: unknown) => e);
    expect(await errorOf(host.generate([]))).toEqual(
      new RangeError("generation.generate: expected `prompt` to hold at least one token (start it with your model's begin-of-sequence token), got an empty array"),
    );
    expect(await errorOf(host.generate('hi' as never))).toEqual(new TypeError('generation.generate: expected `prompt` to be an array of token ids (integers from 0 up), got "hi" (string)'));
    expect(await errorOf(host.generate([1, 2.5]))).toEqual(new TypeError('generation.generate: expected `prompt` to hold token ids (integers from 0 up), got 2.5 (number) at index 1'));
    expect(await errorOf(host.generate([1], { maxTokns: 3 } as never))).toEqual(
      new TypeError('generation.generate: unknown option `maxTokns`; the known options are `maxTokens`, `signal`, `priority`, `timeoutMs`, `stopTokens`'),
    );
    expect(await errorOf(host.generate([1], { maxTokens: 0 }))).toBeInstanceOf(RangeError);
    expect(await errorOf(host.generate([1], { signal: {} as never }))).toEqual(new TypeError('generation.generate: expected `signal` to be an AbortSignal, got an object'));
    // Two reads asked before any token: each gets its own, in order.
    const two = host.generate([30], { maxTokens: 2 })[Symbol.asyncIterator]();
    const reads = [two.next(), two.next(), two.next()];
    await settle();
    await step();
    await step();
    expect(await Promise.all(reads)).toEqual([
      { done: false, value: 31 },
      { done: false, value: 32 },
      { done: true, value: undefined },
    ]);
    const s = host.generate([1], { maxTokens: 1 });
    s[Symbol.asyncIterator]();
    expect(() => s[Symbol.asyncIterator]()).toThrow(new TypeError('generation.generate: a token stream can be iterated once; keep the tokens you read, or call generate() again'));
    s.cancel();

    await expect(host.stop({ drain: 'no' } as never)).rejects.toThrow(new TypeError('generation.stop: expected `drain` to be a boolean, got "no" (string)'));
    const make = (o: object) => () => new GenerationHost(async () => [], { maxBatchSize: 2, initialState: () => 0, ...o } as never);
    expect(make({ maxBatchSize: 0 })).toThrow(new RangeError('GenerationHost: expected `maxBatchSize` to be an integer from 1 and up, got 0 (number)'));
    expect(make({ initialState: 0 })).toThrow(new TypeError('GenerationHost: expected `initialState` to be a function (prompt) => state, got 0 (number)'));
    expect(make({ stopTokens: [-1] })).toThrow(new TypeError('GenerationHost: expected `stopTokens` to hold token ids (integers from 0 up), got -1 (number) at index 0'));
    expect(make({ maxTokns: 1 })).toThrow(/GenerationHost: unknown option `maxTokns`; the known options are `maxBatchSize`, `initialState`/);
    expect(make({ batcher: {} })).toThrow(new TypeError('GenerationHost: expected `batcher` to be a batcher with merge(items) and split(output, ctx), got an object'));
    expect(() => new GenerationHost(42 as never, { maxBatchSize: 1, initialState: () => 0 })).toThrow(
      new TypeError('generation: expected a batch function (batch) => Promise<outputs>, or an executor object with run(batch), as the first argument, got 42 (number)'),
    );
  });
});
