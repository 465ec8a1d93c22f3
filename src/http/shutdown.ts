import type { CloseOptions } from './options';

/**
 * What {@link handleShutdownSignals} closes: an inference server, a gRPC server, a shared
 * `ServingCore`, or anything else with a draining `close()`.
 */
export interface Closable {
  close(options?: CloseOptions): Promise<void>;
}

/** Options of {@link handleShutdownSignals}. */
export interface ShutdownOptions {
  /**
   * The signals that start a graceful shutdown.
   * @default ['SIGTERM', 'SIGINT']
   */
  signals?: readonly NodeJS.Signals[];
  /**
   * The longest the drain may take; then connections are closed anyway.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * Exit the process when done: code 0 after a clean drain, 1 if closing failed. A second signal
   * while draining exits at once with code 1. With `false` the process is left to end by itself.
   * @default true
   */
  exit?: boolean;
  /**
   * Receives a line when a shutdown starts and ends.
   * @default undefined
   */
  log?: (line: string) => void;
  /**
   * Called first, before the server closes: stop taking work from elsewhere (a Redis replica's
   * `close()`, which answers what it holds) while the models still run.
   * @default undefined
   */
  beforeClose?: () => void | Promise<void>;
  /**
   * Called after the server closed, before the process exits (flush logs, close a database).
   * @default undefined
   */
  onClosed?: () => void | Promise<void>;
}

/**
 * Closes `server` gracefully on SIGTERM or SIGINT (what container orchestrators send before
 * killing): it stops accepting connections, answers every request already received, stops the
 * models draining their queues, then exits 0. Returns a function that removes the handlers.
 * Several servers (HTTP and gRPC over one shared core, and the core) are closed together: each
 * stops accepting at once, and the core drains what either admitted before it stops the models.
 *
 * @example
 * ```ts
 * const server = createInferenceServer({ models: { classifier: host } });
 * await server.listen(8080);
 * handleShutdownSignals(server, { log: console.error });
 * ```
 */
export function handleShutdownSignals(server: Closable | readonly Closable[], options: ShutdownOptions = {}): () => void {
  const closables: readonly Closable[] = Array.isArray(server) ? server : [server as Closable];
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const exit = options.exit ?? true;
  let started = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (started) {
      // A second signal: the operator wants out now.
      options.log?.(`microbatch: ${signal} again, exiting without waiting for the drain`);
      if (exit) process.exit(1);
      return;
    }
    started = true;
    options.log?.(`microbatch: ${signal} received, draining (no new connections)`);
    Promise.resolve()
      .then(() => options.beforeClose?.())
      .then(() => Promise.all(closables.map((c) => c.close({ drain: true, timeoutMs: options.timeoutMs ?? 30_000 }))))
      .then(() => options.onClosed?.())
      .then(
        () => {
          options.log?.('microbatch: drained, exiting');
          if (exit) process.exit(0);
        },
        (e: unknown) => {
          options.log?.(`microbatch: shutdown failed: ${String(e)}`);
          if (exit) process.exit(1);
        },
      );
  };
  for (const s of signals) process.on(s, onSignal);
  return () => {
    for (const s of signals) process.off(s, onSignal);
  };
}
