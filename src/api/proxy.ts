import type { Batcher } from '../core/batcher';
import type { HostOptions, RequestOptions, TunableOptions } from '../core/options';
import type { HostStats, StopOptions } from '../engine/model-host';
import { ModelHost } from '../engine/model-host';

/**
 * Options of a {@link Proxy}: the host options, with `maxBatchSize` required.
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 * @typeParam Batch - what `_inference` receives.
 * @typeParam BatchOut - what `_inference` returns.
 */
export type ProxyOptions<In, Out, Batch = readonly In[], BatchOut = ReadonlyArray<Out | Error>> = HostOptions<In, Out, Batch, BatchOut>;

/**
 * Subclass style: extend `Proxy<In, Out>`, pass the options to `super()`, and implement
 * `_inference(items)`, which receives every item of a batch and returns one result (or `Error`)
 * per item, in order. Callers use `inference(x)`; concurrent calls share one `_inference` call.
 *
 * @typeParam In - one request's input.
 * @typeParam Out - one request's result.
 * @typeParam Batch - what `_inference` receives (the items, unless a batcher is given).
 * @typeParam BatchOut - what `_inference` returns (the results, unless a batcher is given).
 *
 * @example
 * ```ts
 * class Sentiment extends Proxy<string, number> {
 *   constructor() { super({ maxBatchSize: 64 }); }
 *   protected async _inference(texts: readonly string[]): Promise<number[]> {
 *     return texts.map((t) => (t.includes('great') ? 1 : 0));
 *   }
 * }
 * const p = new Sentiment();
 * const score = await p.inference('great movie');
 * await p.close();
 * ```
 */
export abstract class Proxy<In, Out, Batch = readonly In[], BatchOut = ReadonlyArray<Out | Error>> implements AsyncDisposable {
  readonly #host: ModelHost<In, Out, Batch, BatchOut>;

  /** @param options - limits and behaviour; a number is shorthand for `{ maxBatchSize }`. */
  constructor(options: number | ProxyOptions<In, Out, Batch, BatchOut>) {
    const o = typeof options === 'number' ? { maxBatchSize: options } : options;
    // Name the host after the subclass, so errors say which model they came from.
    const named = o !== null && typeof o === 'object' && o.name === undefined ? { ...o, name: new.target.name || 'Proxy' } : o;
    this.#host = new ModelHost<In, Out, Batch, BatchOut>(
      (batch: Batch) => this._inference(batch),
      named as HostOptions<In, Out, Batch, BatchOut> & { batcher: Batcher<In, Out, Batch, BatchOut> },
    );
  }

  /**
   * Runs one batch. With the default batcher it receives the items and must return one result (or
   * `Error`, which rejects only that caller) per item, in order; throwing rejects the whole batch.
   */
  protected abstract _inference(batch: Batch): Promise<BatchOut>;

  /** Submits one item; see {@link ModelHost.inference}. */
  inference(item: In, options?: RequestOptions): Promise<Out> {
    return this.#host.inference(item, options);
  }

  /** Alias of {@link Proxy.inference}. */
  predict(item: In, options?: RequestOptions): Promise<Out> {
    return this.#host.inference(item, options);
  }

  /** Prepares the host early; see {@link ModelHost.start}. */
  start(): Promise<void> {
    return this.#host.start();
  }

  /** Changes limits from the next batch; see {@link ModelHost.configure}. */
  configure(options: Partial<TunableOptions>): void {
    this.#host.configure(options);
  }

  /** The host's counters; see {@link ModelHost.stats}. */
  get stats(): HostStats {
    return this.#host.stats;
  }

  /** Resolves when nothing is queued or running. */
  onIdle(): Promise<void> {
    return this.#host.onIdle();
  }

  /** Stops accepting requests and (by default) answers every accepted one; see {@link ModelHost.stop}. */
  close(options?: StopOptions): Promise<void> {
    return this.#host.stop(options);
  }

  /** `await using p = new MyProxy()` closes it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
