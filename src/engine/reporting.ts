import { channel } from 'node:diagnostics_channel';
import { toError } from '../core/describe';
import { CHANNELS, type BatchEvent, type HostObserver, type RequestEvent, type RequestOutcome } from '../core/observer';

const batchChannel = channel(CHANNELS.batch);
const requestChannel = channel(CHANNELS.request);
// Once per process: an observer that throws per event would otherwise flood stderr.
let warnedObserver = false;

/**
 * Where a host's events go: its observer's hooks and the `diagnostics_channel` channels. Every
 * check is a property read, so a host nobody watches pays nothing per request; an observer that
 * throws is warned about once and never stops the host.
 * @internal
 */
export class Reporter {
  constructor(
    private readonly host: string,
    private readonly observer: HostObserver | undefined,
    private readonly now: () => number,
  ) {}

  /** Someone wants per-request events. */
  get requests(): boolean {
    return this.observer?.onRequest !== undefined || requestChannel.hasSubscribers;
  }

  /** Someone wants per-batch events (and so the batch's timings). */
  get batches(): boolean {
    return this.observer?.onBatch !== undefined || batchChannel.hasSubscribers;
  }

  /** The observer's `captureContext`, if it has one. */
  get captures(): boolean {
    return this.observer?.captureContext !== undefined;
  }

  /** The observer's context for the request being made now (in the caller's async context). */
  capture(): unknown {
    const observer = this.observer;
    if (observer?.captureContext === undefined) return undefined;
    try {
      return observer.captureContext();
    } catch (e) {
      warn('captureContext', e);
      return undefined;
    }
  }

  /** A request that was settled after it was queued. */
  settled(r: { readonly rows: number; readonly enqueuedAt: number; readonly startedAt: number }, outcome: RequestOutcome): void {
    const now = this.now();
    this.#emitRequest({ host: this.host, outcome, rows: r.rows, queueMs: r.startedAt - r.enqueuedAt, runMs: now - r.startedAt, totalMs: now - r.enqueuedAt });
  }

  /** A request refused before it was queued. */
  refused(outcome: RequestOutcome): void {
    if (this.requests) this.#emitRequest({ host: this.host, outcome, rows: 0, queueMs: 0, runMs: 0, totalMs: 0 });
  }

  batch(event: BatchEvent): void {
    const observer = this.observer;
    try {
      observer?.onBatch?.(event);
    } catch (e) {
      warn('onBatch', e);
    }
    if (batchChannel.hasSubscribers) batchChannel.publish(event);
  }

  #emitRequest(event: RequestEvent): void {
    const observer = this.observer;
    try {
      observer?.onRequest?.(event);
    } catch (e) {
      warn('onRequest', e);
    }
    if (requestChannel.hasSubscribers) requestChannel.publish(event);
  }
}

/** Reports an observer that threw, once per process (the host carries on). @internal */
export function warn(method: string, e: unknown): void {
  if (warnedObserver) return;
  warnedObserver = true;
  process.emitWarning(`microbatch: an observer's ${method} threw (${toError(e, 'observer').message}); the host carries on`);
}
