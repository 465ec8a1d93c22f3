/**
 * The overhead scenario's reference for running one batch at a time: a plain batcher that does
 * that and nothing else (no options, lifecycle, errors or stats), written the cheap way (one shared
 * promise executor, as microbatch's plain lane). Requests join the newest batch until it holds
 * `maxBatchSize`; when a batch ends, or a request comes while a batch could start, the waiting
 * batches start once the promise jobs queued so far have run (a resolved promise, then
 * `process.nextTick`, the way DataLoader dispatches), up to `inFlight` at once. With `inFlight` 1
 * (the default) it runs in the order microbatch's default (`maxConcurrentBatches: 1`) runs in;
 * DataLoader starts every batch it forms at once, which `inFlight` at least the callers ÷
 * `maxBatchSize` reproduces (bench/batch-order.ts sets the two orders side by side). Set beside
 * microbatch and DataLoader, it tells what the order costs from what microbatch's own work costs.
 */
export function serialBatcher<T>(run: (items: T[]) => Promise<readonly T[]>, maxBatchSize: number, inFlight = 1): (item: T) => Promise<T> {
  const waiting: Array<{ items: T[]; resolves: Array<(value: T) => void> }> = [];
  let newest: { items: T[]; resolves: Array<(value: T) => void> } | undefined;
  let running = 0;
  let scheduled = false;
  let captured: (value: T) => void = () => undefined;
  const capture = (resolve: (value: T) => void): void => {
    captured = resolve;
  };
  const resolved = Promise.resolve();
  const next = (): void => {
    scheduled = false;
    while (running < inFlight) {
      const batch = waiting.shift();
      if (batch === undefined) return;
      if (batch === newest) newest = undefined;
      running++;
      void run(batch.items).then((out) => {
        for (let i = 0; i < out.length; i++) (batch.resolves[i] as (value: T) => void)(out[i] as T);
        running--;
        schedule();
      });
    }
  };
  const tick = (): void => process.nextTick(next);
  const schedule = (): void => {
    if (scheduled || running >= inFlight || waiting.length === 0) return;
    scheduled = true;
    void resolved.then(tick);
  };
  return (item) => {
    const promise = new Promise<T>(capture);
    let b = newest;
    if (b === undefined || b.items.length >= maxBatchSize) waiting.push((b = newest = { items: [], resolves: [] }));
    b.items.push(item);
    b.resolves.push(captured);
    schedule();
    return promise;
  };
}
