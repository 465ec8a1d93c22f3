import type { TimerHandle } from './clock';

/** Life of a request: waiting in the queue, part of a running batch, or answered. */
export enum RequestState {
  Queued = 0,
  Running = 1,
  Settled = 2,
}

/**
 * One `inference()` call inside the host. A class (not object literals) so that every request has
 * the same hidden class on the hot path.
 * @internal
 */
export class PendingRequest<In, Out> {
  state = RequestState.Queued;
  timer: TimerHandle = undefined;
  signal: AbortSignal | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;
  startedAt = 0;
  /** What the observer's `captureContext` returned in the caller's async context. */
  context: unknown = undefined;

  constructor(
    readonly item: In,
    readonly rows: number,
    readonly priority: number,
    readonly enqueuedAt: number,
    /** Absolute time (clock ms) after which the request fails; `Infinity` for none. */
    readonly deadline: number,
    readonly resolve: (value: Out) => void,
    readonly reject: (error: Error) => void,
  ) {}
}
