import { channel } from 'node:diagnostics_channel';
import { ListBatcher } from '../batchers/list-batcher';
import type { Batcher } from '../core/batcher';
import { systemClock, type Clock } from '../core/clock';
import { CHANNELS } from '../core/observer';
import { describe, toError } from '../core/describe';
import { QueueFullError } from '../core/errors';
import { toExecutor, type BatchFunction, type Executor } from '../executors/executor';
import { CallWatch } from '../engine/admission';
import { Lifecycle, type StopOptions } from '../engine/lifecycle';
import { runPipeline, type PipelineConfig } from '../engine/pipeline';
import { warn } from '../engine/reporting';
import { RequestState } from '../engine/request';
import { RequestQueue } from '../engine/request-queue';
import { abortedBefore, hostStopped, sequenceAborted, sequenceTimedOut, stepExecutorFailed, stoppedBefore } from '../engine/settle-errors';
import type { GenerationObserver, SequenceOutcome } from './events';
import { checkGenerate, resolveGeneration, type GenerateOptions, type GenerationOptions, type PrefillInput, type ResolvedGeneration, type StepInput, type StepOutput, stepToken } from './options';
import { newSequence, sequenceEvent, type Sequence } from './sequence';
import { TokenStream } from './token-stream';

const sequenceChannel = channel(CHANNELS.sequence);

/** A snapshot of a generation host's counters. */
export interface GenerationStats {
  /** Prompts waiting for a slot (the same as `waiting`: the name every host's stats share). */
  readonly queued: number;
  /** Prompts waiting for a slot. */
  readonly waiting: number;
  /** Sequences running (holding a slot). */
  readonly running: number;
  /** Decode steps run. */
  readonly steps: number;
  /** Step rows run (the sum of each step's sequences). */
  readonly rows: number;
  /** Tokens generated and delivered. */
  readonly tokens: number;
  /** Sequences by how they ended. */
  readonly sequences: Readonly<Record<SequenceOutcome, number>>;
}

/**
 * Iteration-level (continuous) batching for autoregressive models: the running sequences are
 * batched per decode step, not per request. At every step the batch holds the sequences still
 * going; a new prompt joins at the next step after a slot frees, and a finished sequence leaves at
 * once, its caller's stream ending. Each caller gets an `AsyncIterable` of tokens from
 * `generate()`.
 *
 * The prompt is read one token per step through the same step function (no separate prefill),
 * so a step function needs only to decode: `(tokens, states) → (logits, states)`, merged and split
 * by the batcher (`DecoderBatcher` for ONNX decoders with a fixed-size state or a growing
 * key/value cache).
 *
 * @typeParam State - what a sequence carries between steps.
 * @typeParam Batch - what the step function receives.
 * @typeParam BatchOut - what it returns.
 *
 * @example
 * ```ts
 * const host = new GenerationHost(
 *   async (steps: readonly StepInput<Float32Array>[]) => steps.map((s) => rnn.step(s.token, s.state)), // → { logits, state }
 *   { maxBatchSize: 16, initialState: () => new Float32Array(64), stopTokens: [EOS] },
 * );
 * for await (const token of host.generate([BOS, 17, 4], { maxTokens: 32 })) process.stdout.write(vocab[token]);
 * ```
 */
export class GenerationHost<State, Batch = readonly StepInput<State>[], BatchOut = ReadonlyArray<StepOutput<State> | Error>> {
  readonly #o: ResolvedGeneration;
  readonly #initialState: (prompt: readonly number[]) => State;
  readonly #releaseState: ((state: State) => void) | undefined;
  readonly #choose: (logits: ArrayLike<number>) => number;
  readonly #observer: GenerationObserver | undefined;
  readonly #clock: Clock;
  readonly #executor: Executor<Batch, BatchOut>;
  readonly #pipeline: PipelineConfig<StepInput<State>, StepOutput<State>, Batch, BatchOut>;
  readonly #prefill: PipelineConfig<PrefillInput<State>, StepOutput<State>, unknown, unknown> | undefined;
  /** Waiting prompts, in admission order (priority, then arrival). */
  readonly #waiting = new RequestQueue<Sequence<State>>();
  #running: Array<Sequence<State>> = [];
  #looping = false;
  readonly #life: Lifecycle;
  #steps = 0;
  #rows = 0;
  #tokens = 0;
  readonly #ended: Record<SequenceOutcome, number> = { stop: 0, length: 0, cancelled: 0, error: 0, timeout: 0, aborted: 0, 'queue-full': 0, stopped: 0 };

  constructor(step: BatchFunction<Batch, BatchOut> | Executor<Batch, BatchOut>, options: GenerationOptions<State, Batch, BatchOut>) {
    const where = 'GenerationHost';
    this.#o = resolveGeneration(where, options);
    this.#executor = toExecutor<Batch, BatchOut>(this.#o.name, step, 'as the first argument');
    this.#initialState = options.initialState;
    this.#releaseState = options.releaseState;
    this.#choose = options.choose ?? greedy;
    this.#observer = options.observer;
    this.#clock = options.clock ?? systemClock;
    this.#life = new Lifecycle(this.#o.name, () => !this.#looping && this.#waiting.size === 0 && this.#running.length === 0);
    const batcher = (options.batcher ?? new ListBatcher()) as Batcher<StepInput<State>, StepOutput<State>, Batch, BatchOut>;
    this.#pipeline = { batcher, run: (batch) => this.#executor.run(batch), isolateErrors: false, now: () => this.#clock.now(), name: this.#o.name };
    const prefill = options.prefill;
    this.#prefill =
      prefill === undefined
        ? undefined
        : { batcher: new ListBatcher() as Batcher<PrefillInput<State>, StepOutput<State>, unknown, unknown>, run: (batch) => prefill(batch as readonly PrefillInput<State>[]), isolateErrors: false, now: () => this.#clock.now(), name: `${this.#o.name} prefill` };
  }

  /** The host's name (the `name` option). */
  get name(): string {
    return this.#o.name;
  }

  /** The checked limits. */
  get options(): Readonly<{ maxBatchSize: number; maxTokens: number; maxQueueSize: number; timeoutMs: number }> {
    const { maxBatchSize, maxTokens, maxQueueSize, timeoutMs } = this.#o;
    return { maxBatchSize, maxTokens, maxQueueSize, timeoutMs };
  }

  /** A snapshot of the counters. */
  get stats(): GenerationStats {
    const waiting = this.#waiting.size;
    return { queued: waiting, waiting, running: this.#running.length, steps: this.#steps, rows: this.#rows, tokens: this.#tokens, sequences: { ...this.#ended } };
  }

  /**
   * Prepares the step function's executor (`executor.start()`, once); `generate()` calls it
   * itself, so calling it is needed only to fail early.
   */
  start(): Promise<void> {
    return this.#life.start(async () => this.#executor.start?.(), 'start');
  }

  /**
   * Generates from `prompt` (token ids): the returned stream yields each token as its step
   * finishes. A bad argument, a full queue or a stopped host fail the stream (its iteration
   * throws), never this call.
   */
  generate(prompt: readonly number[], options: GenerateOptions = {}): TokenStream {
    const where = `${this.#o.name}.generate`;
    // The stream exists before its sequence (a bad argument fails the stream alone).
    const made: { sequence?: Sequence<State> } = {};
    const stream = new TokenStream(where, () => {
      if (made.sequence !== undefined) this.#cancel(made.sequence);
    });
    const bad = checkGenerate(where, prompt, options);
    if (bad !== undefined) {
      stream.fail(bad);
      return stream;
    }
    const now = this.#clock.now();
    const s = newSequence<State>(prompt, stream, now, {
      maxTokens: options.maxTokens ?? this.#o.maxTokens,
      stopTokens: options.stopTokens === undefined ? this.#o.stopTokens : new Set(options.stopTokens),
      priority: options.priority ?? 0,
    });
    made.sequence = s;
    if (this.#life.stopping) return this.#refuse(s, hostStopped(where), 'stopped');
    if (options.signal?.aborted === true) return this.#refuse(s, abortedBefore(where, options.signal.reason, 'aborted before it was queued'), 'aborted');
    if (this.#waiting.size >= this.#o.maxQueueSize) return this.#refuse(s, new QueueFullError(this.#o.name, this.#o.maxQueueSize), 'queue-full');

    const timeoutMs = options.timeoutMs ?? this.#o.timeoutMs;
    const signal = options.signal;
    if (timeoutMs !== Infinity || signal !== undefined) {
      // What the sequence had produced, or undefined while it waits for a slot.
      const produced = (): number | undefined => (s.phase === 'waiting' ? undefined : s.produced);
      const expire = (): void => this.#end(s, sequenceTimedOut(this.#o.name, this.#clock.now() - s.createdAt, timeoutMs, produced()), 'timeout');
      const abort = (): void => this.#end(s, sequenceAborted(this.#o.name, signal?.reason, produced()), 'aborted');
      (s.watch = new CallWatch()).arm(this.#clock, timeoutMs, expire, signal, abort);
    }
    // Admission order: higher priority first, arrival order within a priority.
    this.#waiting.push(s);
    this.#kick();
    return stream;
  }

  /**
   * Stops taking prompts (`generate()` then fails with `HostStoppedError`). With `drain` (the
   * default) the waiting and running sequences finish first; without it they end with
   * `HostStoppedError` at once. Then the executor is stopped. Calling it again returns the same
   * promise (a later `drain: false` still ends what the first call was waiting for).
   */
  stop(options: StopOptions = {}): Promise<void> {
    // A later stop({ drain: false }) still ends what a draining stop was waiting for.
    const abandon = (): void => {
      for (const s of [...this.#waiting.live(), ...this.#running]) this.#end(s, stoppedBefore(this.#o.name, 'sequence'), 'stopped');
    };
    return this.#life.stop(options, abandon, async () => {
      await this.#life.settled();
      await this.#executor.stop?.();
    });
  }

  /** Resolves when no sequence waits or runs (at once if none). */
  onIdle(): Promise<void> {
    return this.#life.onIdle();
  }

  #refuse(s: Sequence<State>, error: Error, outcome: SequenceOutcome): TokenStream {
    s.state = RequestState.Settled; // never queued
    this.#end(s, error, outcome);
    return s.stream;
  }

  /** Starts the step loop if it is not running; prompts of the same tick share its first step. */
  #kick(): void {
    if (this.#looping) return;
    this.#looping = true;
    queueMicrotask(() => void this.#loop());
  }

  async #loop(): Promise<void> {
    try {
      await this.start();
    } catch (e) {
      const error = stepExecutorFailed(this.#o.name, e);
      for (const s of this.#waiting.live()) this.#end(s, error, 'error');
    }
    while (true) {
      const fresh = this.#admit();
      if (this.#prefill !== undefined && fresh.length > 0) await this.#runPrefill(fresh);
      const batch = this.#running;
      if (batch.length === 0) break;
      const started = this.#clock.now();
      let prefilling = 0;
      const inputs = batch.map((s): StepInput<State> => {
        if (s.position < s.prompt.length - 1) prefilling++;
        return { token: s.position < s.prompt.length ? (s.prompt[s.position] as number) : s.last, state: s.carry as State, position: s.position };
      });
      const { results } = await runPipeline(this.#pipeline, inputs, false);
      const now = this.#clock.now();
      this.#steps++;
      this.#rows += batch.length;
      const tokensBefore = this.#tokens;
      const finished = this.#deliver(batch, results, now, false);
      this.#report(batch.length, this.#prefill === undefined ? fresh.length : 0, prefilling, this.#tokens - tokensBefore, finished, now - started, false);
      // Lets timers and I/O run between steps (arrivals, aborts, the callers' own reads), as a
      // blocking step function would otherwise hold them until the batch empties.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.#looping = false;
    if (this.#waiting.size > 0) return this.#kick();
    this.#life.notifyIdle();
  }

  /**
   * Hands each sequence its output of a step (or of the prefill): its new state, and its token
   * unless it is still reading its prompt; ends the sequences that stop, reach `maxTokens` or
   * failed, and frees their slots. Returns how many ended.
   */
  #deliver(batch: ReadonlyArray<Sequence<State>>, results: ReadonlyArray<StepOutput<State> | Error | undefined>, now: number, prefilled: boolean): number {
    let finished = 0;
    for (let i = 0; i < batch.length; i++) {
      const s = batch[i] as Sequence<State>;
      if (s.phase === 'done') continue; // cancelled, aborted or timed out during the call
      const out = results[i];
      const token = out instanceof Error ? out : this.#read(out, s, prefilled);
      if (token instanceof Error) {
        this.#end(s, token, 'error');
        finished++;
        continue;
      }
      s.position = prefilled ? s.prompt.length : s.position + 1;
      if (s.position < s.prompt.length) continue; // still reading the prompt
      s.last = token;
      s.produced++;
      this.#tokens++;
      if (s.produced === 1) s.firstTokenAt = now;
      s.lastTokenAt = now;
      s.stream.push(token);
      if (s.stopTokens.has(token)) this.#end(s, undefined, 'stop');
      else if (s.produced >= s.maxTokens) this.#end(s, undefined, 'length');
      else continue;
      finished++;
    }
    this.#running = this.#running.filter((q) => q.phase === 'running');
    return finished;
  }

  /** Reads the new sequences' whole prompts in one prefill call; each gets its first token from it. */
  async #runPrefill(fresh: ReadonlyArray<Sequence<State>>): Promise<void> {
    const started = this.#clock.now();
    const inputs = fresh.map((s): PrefillInput<State> => ({ prompt: s.prompt, state: s.carry as State }));
    const { results } = await runPipeline(this.#prefill as PipelineConfig<PrefillInput<State>, StepOutput<State>, unknown, unknown>, inputs, false);
    const now = this.#clock.now();
    const tokensBefore = this.#tokens;
    const finished = this.#deliver(fresh, results, now, true);
    this.#report(fresh.length, fresh.length, fresh.length, this.#tokens - tokensBefore, finished, now - started, true);
  }

  /** Moves waiting prompts into free slots; returns the sequences that joined. */
  #admit(): Array<Sequence<State>> {
    const joined: Array<Sequence<State>> = [];
    while (this.#running.length < this.#o.maxBatchSize && this.#waiting.size > 0) {
      const s = this.#waiting.take(1)[0] as Sequence<State>;
      s.state = RequestState.Running;
      try {
        s.carry = this.#initialState(s.prompt);
      } catch (e) {
        this.#end(s, toError(e, 'initialState'), 'error');
        continue;
      }
      s.phase = 'running';
      s.firstStepAt = this.#clock.now();
      this.#running.push(s);
      joined.push(s);
    }
    return joined;
  }

  /** A step's (or the prefill's) output for one sequence: its new state kept, its token returned (or what is wrong with it). */
  #read(out: StepOutput<State> | undefined, s: Sequence<State>, prefilled: boolean): number | Error {
    const where = `${this.#o.name}: the ${prefilled ? 'prefill' : 'step'}'s output for a sequence`;
    if (typeof out !== 'object' || out === null) return new TypeError(`${where} must be { logits, state } or { token, state }, got ${describe(out)}`);
    s.carry = out.state;
    return stepToken(out, !prefilled && s.position + 1 < s.prompt.length, this.#choose, where);
  }

  #cancel(s: Sequence<State>): void {
    this.#end(s, undefined, 'cancelled');
  }

  /** Ends a sequence once: its stream, its timer and listener, its slot (at the next step), its report. */
  #end(s: Sequence<State>, error: Error | undefined, outcome: SequenceOutcome): void {
    if (s.phase === 'done') return;
    const waited = s.phase === 'waiting';
    s.phase = 'done';
    if (s.state === RequestState.Queued) this.#waiting.discard(s);
    s.state = RequestState.Settled;
    s.watch?.disarm(this.#clock);
    if (!waited && s.carry !== undefined && this.#releaseState !== undefined) {
      try {
        this.#releaseState(s.carry);
      } catch (e) {
        process.emitWarning(`${this.#o.name}: releaseState threw (${toError(e, 'releaseState').message}); the sequence ended anyway`);
      }
    }
    if (error === undefined) s.stream.end(outcome === 'length' ? 'length' : outcome === 'cancelled' ? 'cancelled' : 'stop');
    else s.stream.fail(error);
    this.#ended[outcome]++;
    const observer = this.#observer;
    const publish = sequenceChannel.hasSubscribers;
    if (observer?.onSequence === undefined && !publish) return;
    const event = sequenceEvent(this.#o.name, s, outcome, this.#clock.now());
    try {
      observer?.onSequence?.(event);
    } catch (e) {
      warn('onSequence', e);
    }
    if (publish) sequenceChannel.publish(event);
  }

  #report(sequences: number, joined: number, prefilling: number, tokens: number, finished: number, runMs: number, prefill: boolean): void {
    const observer = this.#observer;
    if (observer?.onStep === undefined) return;
    try {
      observer.onStep({ host: this.#o.name, prefill, sequences, joined, prefilling, tokens, finished, runMs, waiting: this.#waiting.size });
    } catch (e) {
      warn('onStep', e);
    }
  }
}

/** Greedy decoding: the index of the largest score, the lowest index on ties. */
export function greedy(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if ((logits[i] as number) > (logits[best] as number)) best = i;
  return best;
}
