import type { CallWatch } from '../engine/admission';
import { RequestState } from '../engine/request';
import type { SequenceEvent, SequenceOutcome } from './events';
import type { TokenStream } from './token-stream';

// A generation host's sequences: their shape, how one starts, and the report of how one ended.

/** One caller's sequence, from `generate()` to its end. @internal */
export interface Sequence<State> {
  readonly prompt: readonly number[];
  readonly maxTokens: number;
  readonly stopTokens: ReadonlySet<number>;
  readonly priority: number;
  readonly createdAt: number;
  readonly stream: TokenStream;
  /** For the admission queue: one row, queued from `createdAt`, no deadline of its own there. */
  readonly rows: 1;
  readonly enqueuedAt: number;
  readonly deadline: number;
  state: RequestState;
  /** What it carries between steps (the step function's state). */
  carry: State | undefined;
  position: number;
  last: number;
  produced: number;
  phase: 'waiting' | 'running' | 'done';
  firstStepAt: number;
  firstTokenAt: number;
  lastTokenAt: number;
  /** Its deadline timer and abort listener, when it has either. */
  watch: CallWatch | undefined;
}

/** A sequence just asked for, waiting for a slot: queued from `now`, nothing generated yet. @internal */
export function newSequence<State>(prompt: readonly number[], stream: TokenStream, now: number, o: { maxTokens: number; stopTokens: ReadonlySet<number>; priority: number }): Sequence<State> {
  return {
    prompt: [...prompt],
    maxTokens: o.maxTokens,
    stopTokens: o.stopTokens,
    priority: o.priority,
    createdAt: now,
    stream,
    rows: 1,
    enqueuedAt: now,
    deadline: Infinity,
    state: RequestState.Queued,
    carry: undefined,
    position: 0,
    last: -1,
    produced: 0,
    phase: 'waiting',
    firstStepAt: NaN,
    firstTokenAt: NaN,
    lastTokenAt: NaN,
    watch: undefined,
  };
}

/** The report of a sequence that ended at `now` (the observer's `onSequence`, the diagnostics channel). @internal */
export function sequenceEvent(host: string, s: Sequence<unknown>, outcome: SequenceOutcome, now: number): SequenceEvent {
  const decodeMs = s.lastTokenAt - s.firstTokenAt;
  return {
    host,
    outcome,
    promptTokens: s.prompt.length,
    tokens: s.produced,
    queueMs: (Number.isNaN(s.firstStepAt) ? now : s.firstStepAt) - s.createdAt,
    timeToFirstTokenMs: s.firstTokenAt - s.createdAt,
    totalMs: now - s.createdAt,
    tokensPerSecond: s.produced >= 2 && decodeMs > 0 ? ((s.produced - 1) * 1000) / decodeMs : 0,
  };
}
