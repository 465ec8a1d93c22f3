import type { BatchEvent, HostObserver, RequestEvent } from '../core/observer';

/**
 * Combines several observers into one (a host takes a single `observer`). Each observer sees every
 * event; contexts captured by one observer's `captureContext()` are handed back to that observer
 * only, so a tracing adapter and a logger can be combined without seeing each other's values.
 * One observer that throws does not starve the others: the first error is rethrown after all ran,
 * and the host reports it once with `process.emitWarning`.
 *
 * @example
 * ```ts
 * const host = new ModelHost(fn, {
 *   maxBatchSize: 32,
 *   observer: combineObservers(prom.observer, otel.observer, { onBatch: (b) => log(b) }),
 * });
 * ```
 */
export function combineObservers(...observers: ReadonlyArray<HostObserver | undefined>): HostObserver {
  const list = observers.filter((o): o is HostObserver => o !== undefined);
  const capturing = list.map((o) => o.captureContext !== undefined);
  const combined: HostObserver = {
    onBatch(event: BatchEvent): void {
      each(list, (o, i) => {
        if (o.onBatch === undefined) return;
        // Give each observer its own slice of the captured tuples (or none, as if it were alone).
        const contexts = capturing[i] ? event.contexts.map((c) => (c as unknown[] | undefined)?.[i]) : [];
        o.onBatch({ ...event, contexts });
      });
    },
    onRequest(event: RequestEvent): void {
      each(list, (o) => o.onRequest?.(event));
    },
  };
  if (capturing.some(Boolean)) {
    combined.captureContext = () => {
      const tuple: unknown[] = new Array(list.length);
      each(list, (o, i) => {
        if (o.captureContext !== undefined) tuple[i] = o.captureContext();
      });
      return tuple;
    };
  }
  return combined;
}

function each(list: readonly HostObserver[], fn: (o: HostObserver, i: number) => void): void {
  let failed = false;
  let error: unknown;
  for (let i = 0; i < list.length; i++) {
    try {
      fn(list[i] as HostObserver, i);
    } catch (e) {
      if (!failed) error = e;
      failed = true;
    }
  }
  if (failed) throw error;
}
