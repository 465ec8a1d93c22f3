/**
 * The calls a remote client has sent and not yet answered: each settles exactly once, by its
 * answer, its time limit, its signal, or the loss of the connection; the client learns which of its
 * own calls to take back (`onGiveUp`) and when the table empties (`drained`). Shared by the socket
 * and Redis clients, whose callers must hear at once even when the far side never answers.
 * @internal
 */
export class PendingCalls<Id> {
  readonly #calls = new Map<Id, Call>();
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
    return new Promise<T>((resolve, reject) => {
      const call: Call = { resolve: resolve as (v: unknown) => void, reject, timer: undefined, signal: o.signal, onAbort: undefined };
      this.#calls.set(id, call);
      if (o.timeoutMs !== Infinity) {
        const sentAt = performance.now();
        call.timer = setTimeout(() => {
          this.settle(id, o.timeoutError(performance.now() - sentAt));
          o.onGiveUp();
        }, o.timeoutMs);
      }
      const signal = o.signal;
      if (signal !== undefined) {
        call.onAbort = () => {
          this.settle(id, o.abortError(signal.reason));
          o.onGiveUp();
        };
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      this.#onChange();
    });
  }

  /** Settles call `id` with `error`, or with `value`; false when it was settled already or is unknown. */
  settle(id: Id, error: Error | undefined, value?: unknown): boolean {
    const call = this.#calls.get(id);
    if (call === undefined) return false;
    this.#calls.delete(id);
    clearTimeout(call.timer);
    if (call.signal !== undefined && call.onAbort !== undefined) call.signal.removeEventListener('abort', call.onAbort);
    if (error === undefined) call.resolve(value);
    else call.reject(error);
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

interface Call {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}
