/** Why a generated sequence ended: a stop token, `maxTokens` reached, or the caller cancelled it. */
export type FinishReason = 'stop' | 'length' | 'cancelled';

/**
 * What `generate()` returns: the caller's tokens as they are produced, as an `AsyncIterable`.
 * Iterate it once (`for await`); leaving the loop early (`break`, `return`, a throw) cancels the
 * sequence, which frees its slot at the next step. Errors (a full queue, a deadline, an abort, a
 * failed step) are thrown by the iteration, after the tokens that came before them.
 *
 * @example
 * ```ts
 * for await (const token of host.generate(prompt, { maxTokens: 64 })) process.stdout.write(decode(token));
 * const all = await host.generate(prompt).collect(); // or every token at once
 * ```
 */
export class TokenStream implements AsyncIterable<number> {
  readonly #buffer: number[] = [];
  #read = 0;
  #ended = false;
  #error: Error | undefined;
  #reason: FinishReason | undefined;
  /** Reads waiting for a token, in call order (a `for await` has one; manual `next()` calls may have more). */
  readonly #waiters: Array<{ resolve: (r: IteratorResult<number>) => void; reject: (e: Error) => void }> = [];
  #iterated = false;
  readonly #onCancel: () => void;
  readonly #where: string;

  /** @internal */
  constructor(where: string, onCancel: () => void) {
    this.#where = where;
    this.#onCancel = onCancel;
  }

  /** Why the sequence ended, once it has ended without an error; `undefined` before. */
  get finishReason(): FinishReason | undefined {
    return this.#reason;
  }

  /** Tokens produced so far (read or not). */
  get produced(): number {
    return this.#buffer.length;
  }

  /** Stops the sequence: its slot is freed at the next step, and iteration ends after the tokens already produced. */
  cancel(): void {
    if (this.#ended) return;
    this.#onCancel();
    this.end('cancelled');
  }

  /** Reads the whole stream: resolves with every token once the sequence ends, or rejects with its error. */
  async collect(): Promise<number[]> {
    const out: number[] = [];
    for await (const token of this) out.push(token);
    return out;
  }

  [Symbol.asyncIterator](): AsyncIterator<number> {
    if (this.#iterated) throw new TypeError(`${this.#where}: a token stream can be iterated once; keep the tokens you read, or call generate() again`);
    this.#iterated = true;
    return {
      next: () => this.#next(),
      return: async () => {
        this.cancel();
        return { done: true, value: undefined };
      },
    };
  }

  /** @internal */
  push(token: number): void {
    this.#buffer.push(token);
    const w = this.#waiters.shift();
    if (w !== undefined) w.resolve({ done: false, value: this.#buffer[this.#read++] as number });
  }

  /** @internal */
  end(reason: FinishReason): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#reason = reason;
    this.#wake();
  }

  /** @internal */
  fail(error: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#wake();
  }

  /** @internal */
  get ended(): boolean {
    return this.#ended;
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) {
      if (this.#error !== undefined) w.reject(this.#error);
      else w.resolve({ done: true, value: undefined });
    }
  }

  #next(): Promise<IteratorResult<number>> {
    if (this.#read < this.#buffer.length) return Promise.resolve({ done: false, value: this.#buffer[this.#read++] as number });
    if (this.#ended) return this.#error !== undefined ? Promise.reject(this.#error) : Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
  }
}
