import type { HostOptions } from '../core/options';
import type { WarmupOptions } from '../core/options';
import { serveOnnxModel } from './create-onnx-host';
import type { OnnxFeeds, OnnxResults, ServingHost } from './onnx-host';
import { basename, resolve } from 'node:path';

export type { ServingHost } from './onnx-host';

/**
 * Options of the deprecated {@link createServingHost}: the host's limits plus where the model runs
 * (`createOnnxHost` takes the same options).
 *
 * @deprecated Use `OnnxHostOptions` with {@link createOnnxHost} (`workers`, `threads`, `machine` are among them).
 *
 * @example
 * ```ts
 * const options: ServingHostOptions = { maxBatchSize: 32, workers: 1, threads: 2 };
 * ```
 */
export interface ServingHostOptions extends Omit<HostOptions<OnnxFeeds, OnnxResults, OnnxFeeds, OnnxResults>, 'batcher' | 'maxConcurrentBatches' | 'warmup'> {
  /**
   * Batches to run before the host is returned (see `HostOptions.warmup`); `true` makes the
   * samples from the model's metadata (zeros), as `createOnnxHost`'s `warmup: true` does. Each
   * worker's session is warmed by the batches it happens to run.
   * @default no warm-up
   */
  warmup?: WarmupOptions<OnnxFeeds> | true;
  /**
   * Worker threads, each with its own session; `0` runs the model on the calling thread (simpler,
   * but `session.run()` then blocks the event loop, and with it every HTTP connection, for the
   * whole inference).
   * @default 1
   */
  workers?: number;
  /**
   * onnxruntime intra-op threads per session. Keep `workers × threads ≤ cores`.
   * @default `'shared'`: max(1, floor((cores − 1) / max(1, workers))); `'dedicated'`: max(1, floor(cores / max(1, workers)))
   */
  threads?: number;
  /**
   * How the machine is shared. `'shared'` leaves the event loop a core and turns onnxruntime's
   * spin-waiting off: robust when anything else runs (other processes, the HTTP work of this one).
   * `'dedicated'` gives the model every core and lets its pool threads spin between runs: measured
   * 1.15–1.38× the throughput on an otherwise idle 2-core machine, but 0.3–0.6× when other work
   * competes for the cores (docs/onnx.md, "Threads"). Choose it only for a machine that runs
   * nothing else.
   * @default 'shared'
   */
  machine?: 'shared' | 'dedicated';
}

/**
 * Loads an ONNX model file into a started batching host, in worker threads by default.
 *
 * @deprecated Use {@link createOnnxHost} with `workers` (`createOnnxHost(path, { workers: 1, ... })`):
 * the same host, named by the rule "the first argument says what the model is, an option where it runs".
 *
 * @example
 * ```ts
 * const host = await createServingHost('model.onnx', { maxBatchSize: 32, maxQueueSize: 256, workers: 1, threads: 2 });
 * ```
 */
export async function createServingHost(modelPath: string, options: ServingHostOptions): Promise<ServingHost> {
  const name = options.name ?? basename(resolve(modelPath)).replace(/\.onnx$/i, '');
  return serveOnnxModel('createServingHost', modelPath, { workers: 1, ...options, name });
}
