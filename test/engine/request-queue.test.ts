import { RequestState } from '../../src/engine/request';
import { RequestQueue, type Queueable } from '../../src/engine/request-queue';

let seq = 0;
function entry(priority = 0, rows = 1, enqueuedAt = seq): Queueable & { id: number } {
  return { id: seq++, priority, rows, enqueuedAt, deadline: Infinity, state: RequestState.Queued };
}

describe('RequestQueue', () => {
  test('serves higher priority first and FIFO within a level', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    const a = entry(0), b = entry(5), c = entry(0), d = entry(5), e = entry(-1), f = entry(10);
    for (const x of [a, b, c, d, e, f]) q.push(x);
    expect(q.take(100).map((x) => x.id)).toEqual([f, b, d, a, c, e].map((x) => x.id));
    expect(q.size).toBe(0);
  });

  test('walk reads live entries in priority order lazily, skipping discarded ones and empty levels', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    const a = entry(0), b = entry(5), c = entry(0), d = entry(5), e = entry(-1);
    for (const x of [a, b, c, d, e]) q.push(x);
    d.state = RequestState.Settled;
    q.discard(d);
    b.state = RequestState.Settled;
    q.discard(b);
    expect([...q.walk()]).toEqual([a, c, e]); // level 5 holds nothing live
    const it = q.walk();
    expect(it.next()).toEqual({ done: false, value: a });
    expect(it.next()).toEqual({ done: false, value: c });
    expect(it.next()).toEqual({ done: false, value: e });
    expect(it.next()).toEqual({ done: true, value: undefined });
    expect(it.next()).toEqual({ done: true, value: undefined });
    expect([...new RequestQueue<ReturnType<typeof entry>>().walk()]).toEqual([]);
  });

  test('take stops at the first request that does not fit, so it is never overtaken', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    const a = entry(0, 3), b = entry(0, 4), c = entry(0, 1);
    for (const x of [a, b, c]) q.push(x);
    expect(q.take(5)).toEqual([a]);
    expect(q.rows).toBe(5);
    expect(q.take(5)).toEqual([b, c]);
    expect(q.rows).toBe(0);
  });

  test('discarded entries are skipped and no longer counted', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    const a = entry(0, 2, 10), b = entry(0, 1, 11), c = entry(0, 1, 12);
    for (const x of [a, b, c]) q.push(x);
    a.state = RequestState.Settled;
    q.discard(a);
    expect(q.size).toBe(2);
    expect(q.rows).toBe(2);
    expect(q.oldestEnqueuedAt()).toBe(11);
    expect([...q.live()]).toEqual([b, c]);
    expect([...q.walk()]).toEqual([b, c]);
    expect(q.take(10)).toEqual([b, c]);
    expect(q.oldestEnqueuedAt()).toBeUndefined();
  });

  test('oldest and earliest deadline look across priority levels', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    const old = entry(0, 1, 1);
    const newer = { ...entry(9, 1, 5), deadline: 50 };
    q.push(old);
    q.push(newer);
    expect(q.oldestEnqueuedAt()).toBe(1);
    expect(q.earliestDeadline()).toBe(50);
  });

  test('clear returns every live entry and empties the queue', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    const xs = [entry(), entry(1), entry()];
    xs.forEach((x) => q.push(x));
    expect(q.clear()).toHaveLength(3);
    expect(q.size).toBe(0);
    expect(q.take(10)).toEqual([]);
  });

  test('stays correct across compaction of a long-lived FIFO', () => {
    const q = new RequestQueue<ReturnType<typeof entry>>();
    let next = 0;
    const taken: number[] = [];
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 100; i++) q.push({ ...entry(), id: next++ });
      taken.push(...q.take(90).map((x) => x.id));
    }
    taken.push(...q.take(10_000).map((x) => x.id));
    expect(taken).toEqual(Array.from({ length: next }, (_, i) => i));
  });
});
