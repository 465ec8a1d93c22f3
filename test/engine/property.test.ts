/**
 * Random mixes of requests, aborts, timeouts, throwing batches, wrong-length outputs and per-item
 * errors. Whatever happens, every request settles, with the right value or an error type its own
 * story allows, and the host keeps serving afterwards.
 */
import fc from 'fast-check';
import { ModelHost } from '../../src/engine/model-host';
import { AbortError, BatchSizeMismatchError, DeadlineExceededError, QueueFullError } from '../../src/core/errors';
import { ManualClock } from '../../src/core/manual-clock';
import { settle } from '../support/controlled-model';

type Behaviour = 'ok' | 'throw' | 'short' | 'item-errors' | 'slow';

const requestArb = fc.record({
  at: fc.integer({ min: 0, max: 30 }),
  timeoutMs: fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
  abortAt: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
  priority: fc.integer({ min: -1, max: 1 }),
});

const scenarioArb = fc.record({
  maxBatchSize: fc.integer({ min: 1, max: 6 }),
  maxDelayMs: fc.constantFrom(0, 0, 2, 5),
  maxConcurrentBatches: fc.integer({ min: 1, max: 3 }),
  maxQueueSize: fc.constantFrom(Infinity, Infinity, 4),
  isolateErrors: fc.boolean(),
  behaviours: fc.array(fc.constantFrom<Behaviour>('ok', 'ok', 'throw', 'short', 'item-errors', 'slow'), { minLength: 1, maxLength: 12 }),
  requests: fc.array(requestArb, { minLength: 1, maxLength: 40 }),
});

test('every request settles exactly once with a value or an error its story allows, and the host keeps serving', async () => {
  await fc.assert(
    fc.asyncProperty(scenarioArb, async (s) => {
      const clock = new ManualClock();
      let call = 0;
      let healthy = false;
      let inFlight = 0;
      let maxInFlight = 0;
      let largest = 0;
      const host = new ModelHost(
        (xs: readonly number[]) =>
          new Promise<Array<number | Error>>((resolve, reject) => {
            const behaviour: Behaviour = healthy ? 'ok' : (s.behaviours[call++ % s.behaviours.length] as Behaviour);
            largest = Math.max(largest, xs.length);
            maxInFlight = Math.max(maxInFlight, ++inFlight);
            clock.setTimer(() => {
              inFlight--;
              if (behaviour === 'throw') reject(new Error('boom'));
              else if (behaviour === 'short') resolve(xs.slice(1).map((x) => x * 2));
              else if (behaviour === 'item-errors') resolve(xs.map((x) => (x % 2 === 1 ? new RangeError(`odd ${x}`) : x * 2)));
              else resolve(xs.map((x) => x * 2));
            }, behaviour === 'slow' ? 15 : 1);
          }),
        {
          maxBatchSize: s.maxBatchSize,
          maxDelayMs: s.maxDelayMs,
          maxConcurrentBatches: s.maxConcurrentBatches,
          maxQueueSize: s.maxQueueSize,
          isolateErrors: s.isolateErrors,
          clock,
        },
      );

      const outcomes: Array<{ settled: number; settledAt?: number; value?: number; error?: Error }> = s.requests.map(() => ({ settled: 0 }));
      const controllers = s.requests.map(() => new AbortController());
      const aborted = new Set<number>();
      // Aborted while the caller still waited: the abort must win over a result that comes later.
      const abortedWhilePending = new Set<number>();
      for (let t = 0; t <= 45; t++) {
        s.requests.forEach((r, i) => {
          if (r.at === t) {
            host
              .inference(i, { timeoutMs: r.timeoutMs, priority: r.priority, signal: r.abortAt !== undefined ? controllers[i]!.signal : undefined })
              .then(
                (value) => Object.assign(outcomes[i]!, { settled: outcomes[i]!.settled + 1, settledAt: clock.now(), value }),
                (error: Error) => Object.assign(outcomes[i]!, { settled: outcomes[i]!.settled + 1, settledAt: clock.now(), error }),
              );
          }
          if (r.abortAt === t && r.abortAt >= r.at) {
            aborted.add(i);
            if (outcomes[i]!.settled === 0) abortedWhilePending.add(i);
            controllers[i]!.abort();
          }
        });
        await settle();
        clock.advance(1);
      }
      for (let k = 0; k < 60 && outcomes.some((o) => o.settled === 0); k++) {
        clock.advance(5);
        await settle();
      }

      expect(largest).toBeLessThanOrEqual(s.maxBatchSize);
      // A batch abandoned by batchTimeoutMs could exceed this; none is configured here.
      expect(maxInFlight).toBeLessThanOrEqual(s.maxConcurrentBatches);
      const has = (b: Behaviour) => s.behaviours.includes(b);
      outcomes.forEach((o, i) => {
        const r = s.requests[i]!;
        expect(o.settled).toBe(1);
        if (o.error === undefined) {
          expect(o.value).toBe(i * 2);
          // A value must beat the request's deadline and its abort: neither may be ignored.
          if (r.timeoutMs !== undefined) expect(o.settledAt).toBeLessThan(r.at + r.timeoutMs);
          expect(abortedWhilePending.has(i)).toBe(false);
          return;
        }
        const e = o.error;
        // Aborted while pending: only a rejection already decided in that same instant (refused as
        // queue-full, or its timeout timer fired just before) may take the abort's place.
        if (abortedWhilePending.has(i)) expect([AbortError, DeadlineExceededError, QueueFullError].some((E) => e instanceof E)).toBe(true);
        if (e instanceof AbortError) expect(aborted.has(i)).toBe(true);
        else if (e instanceof DeadlineExceededError) expect(r.timeoutMs).toBeDefined();
        else if (e instanceof QueueFullError) expect(s.maxQueueSize).toBe(4);
        else if (e instanceof BatchSizeMismatchError) expect(has('short')).toBe(true);
        else if (e instanceof RangeError) expect([has('item-errors'), e.message]).toEqual([true, `odd ${i}`]);
        else expect([has('throw'), e.message]).toEqual([true, 'boom']);
      });

      healthy = true;
      let after: number | Error | undefined;
      host.inference(21).then(
        (v) => (after = v),
        (e: Error) => (after = e),
      );
      for (let k = 0; k < 20 && after === undefined; k++) {
        await settle();
        clock.advance(5);
      }
      expect(after).toBe(42);
      // Batches whose callers all timed out may still be running: let the model finish them.
      let stopped = false;
      void host.stop().then(() => (stopped = true));
      for (let k = 0; k < 20 && !stopped; k++) {
        clock.advance(5);
        await settle();
      }
      expect(stopped).toBe(true);
      expect(host.stats).toMatchObject({ queued: 0, running: 0, runningBatches: 0 });
    }),
    { numRuns: 100 },
  );
});
