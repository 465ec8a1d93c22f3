import { CallWatch } from './admission';
import type { ReleasedBatch } from './batch-run';

/** Life of a request: waiting in the queue, part of a running batch, or answered. */
export enum RequestState {
  Queued = 0,
  Running = 1,
  Settled = 2,
}

/**
 * One `inference()` call inside the host. A class (not object literals) so that every request has
 * the same hidden class on the hot path, and as small as possible: it is allocated per request.
 * @internal
 */
export class PendingRequest<In, Out> {
  state = RequestState.Queued;
  startedAt = 0;
  /** Priority, deadline, timer, signal and tracing context: most requests have none of them. */
  extras: RequestExtras | undefined = undefined;

  constructor(
    readonly item: In,
    readonly rows: number,
    readonly enqueuedAt: number,
    readonly resolve: (value: Out) => void,
    readonly reject: (error: Error) => void,
  ) {}

  /** Larger runs first. */
  get priority(): number {
    return this.extras === undefined ? 0 : this.extras.priority;
  }

  /** Absolute time (clock ms) after which the request fails; `Infinity` for none. */
  get deadline(): number {
    return this.extras === undefined ? Infinity : this.extras.deadline;
  }
}

/** The parts of a request that only some requests have: its watch (timer, signal) and more. @internal */
export class RequestExtras extends CallWatch {
  constructor(
    readonly priority: number,
    /** Absolute time (clock ms) after which the request fails; `Infinity` for none. */
    readonly deadline: number,
    /** What the observer's `captureContext` returned in the caller's async context. */
    public context: unknown,
  ) {
    super();
  }
}

/** A released batch of request objects (see {@link ReleasedBatch}). @internal */
export class RequestBatch<In, Out> implements ReleasedBatch<In> {
  rows = 0;

  constructor(readonly requests: ReadonlyArray<PendingRequest<In, Out>>) {}

  get length(): number {
    return this.requests.length;
  }

  start(startedAt: number): readonly In[] {
    const requests = this.requests;
    const items = new Array<In>(requests.length);
    let rows = 0;
    for (let i = 0; i < requests.length; i++) {
      const r = requests[i] as PendingRequest<In, Out>;
      r.state = RequestState.Running;
      r.startedAt = startedAt;
      rows += r.rows;
      items[i] = r.item;
    }
    this.rows = rows;
    return items;
  }

  enqueuedAt(i: number): number {
    return (this.requests[i] as PendingRequest<In, Out>).enqueuedAt;
  }

  context(i: number): unknown {
    return (this.requests[i] as PendingRequest<In, Out>).extras?.context;
  }
}
