import { systemClock } from '../core/clock';
import { PendingCall } from '../engine/admission';

/**
 * The calls a remote client has sent and not yet answered, by id: each is a {@link PendingCall}
 * (the one deadline, abort and settle-once mechanism of every host), settled by its answer, its
 * time limit, its signal, or the loss of the connection; the client learns which of its own calls
 * to take back (`onGiveUp`) and when the table empties (`drained`). Shared by the socket and Redis
 * clients, whose callers must hear at once even when the far side never answers. Real time: the
 * far side's clock is not the caller's to inject.
 * @internal
 */
export class PendingCalls<Id> {
  readonly #calls = new Map<Id, PendingCall<unknown>>();
  readonly #onChange: () => void;
  #drained: (() => void) | undefined;

  /** @param onChange - called after every call added or settled (the socket client refs or unrefs its socket). */
  constructor(onChange: () => void = () => undefined) {
    this.#onChange = onChange;
  }

  get size(): number {
    return this.#calls.size;
  }

  /**
   * Registers call `id` and returns its promise. After `timeoutMs` (Infinity: never) it rejects
   * with `timeoutError(elapsedMs)`, when `signal` aborts with `abortError(reason)`; either way
   * `onGiveUp` runs next, so the client can take the call back from the far side.
   */
  add<T>(id: Id, o: { timeoutMs: number; signal: AbortSignal | undefined; timeoutError(elapsedMs: number): Error; abortError(reason: unknown): Error; onGiveUp(): void }): Promise<T> {
    return PendingCall.open<T>(systemClock, (call) => {
      this.#calls.set(id, call as PendingCall<unknown>);
      const sentAt = systemClock.now();
      const giveUp = (error: Error): void => {
        this.settle(id, error);
        o.onGiveUp();
      };
      call.arm(systemClock, o.timeoutMs, () => giveUp(o.timeoutError(systemClock.now() - sentAt)), o.signal, () => giveUp(o.abortError(o.signal?.reason)));
      this.#onChange();
    });
  }

  /** Settles call `id` with `error`, or with `value`; false when it was settled already or is unknown. */
  settle(id: Id, error: Error | undefined, value?: unknown): boolean {
    const call = this.#calls.get(id);
    if (call === undefined) return false;
    this.#calls.delete(id);
    call.settle(error, value);
    this.#onChange();
    if (this.#calls.size === 0) this.#drained?.();
    return true;
  }

  /** Settles every call with `error` (the connection was lost). */
  settleAll(error: Error): void {
    for (const id of [...this.#calls.keys()]) this.settle(id, error);
  }

  /** Resolves once no call is pending (at once if none is). */
  drained(): Promise<void> {
    return this.#calls.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.#drained = resolve));
  }
}
