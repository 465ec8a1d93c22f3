import { RequestState } from './request';

/** What the queue needs to know about an entry. */
export interface Queueable {
  readonly rows: number;
  readonly priority: number;
  readonly enqueuedAt: number;
  readonly deadline: number;
  state: RequestState;
}

/** Array-backed FIFO with an advancing head; compacts once the dead prefix dominates. */
class Fifo<T> {
  // Plain fields: the queue walks them directly in take(), the hottest loop of the engine.
  items: T[] = [];
  head = 0;

  get isEmpty(): boolean {
    return this.head === this.items.length;
  }
  push(value: T): void {
    this.items.push(value);
  }
  peek(): T | undefined {
    return this.items[this.head];
  }
  shift(): void {
    this.advance(this.head + 1);
  }
  /** Moves the head to `to`, releasing the consumed prefix when it is empty or dominant. */
  advance(to: number): void {
    this.head = to;
    if (to === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (to >= 1024 && to * 2 >= this.items.length) {
      this.items = this.items.slice(to);
      this.head = 0;
    }
  }
}

interface Level<T> {
  readonly priority: number;
  readonly fifo: Fifo<T>;
}

/**
 * Waiting requests: higher `priority` first, FIFO within a level. Removal (abort, timeout) is lazy:
 * the owner marks the entry not-queued and calls {@link RequestQueue.discard}; the entry is skipped
 * when it reaches the head. `size` and `rows` count live entries only.
 * @internal
 */
export class RequestQueue<T extends Queueable> {
  /** Sorted by priority, highest first. Nearly always a single level. */
  #levels: Level<T>[] = [];
  #size = 0;
  #rows = 0;

  /** Live (still queued) requests. */
  get size(): number {
    return this.#size;
  }
  /** Rows of the live requests. */
  get rows(): number {
    return this.#rows;
  }

  push(entry: T): void {
    const levels = this.#levels;
    // Nearly every queue has one level: skip the search for it.
    const level = levels.length === 1 && (levels[0] as Level<T>).priority === entry.priority ? (levels[0] as Level<T>) : this.#level(entry.priority);
    level.fifo.push(entry);
    this.#size++;
    this.#rows += entry.rows;
  }

  /** Accounts for an entry that left the queue early; the caller has already changed its state. */
  discard(entry: T): void {
    this.#size--;
    this.#rows -= entry.rows;
  }

  /**
   * Removes and returns live entries in priority order while their rows fit in `maxRows`. Stops at
   * the first entry that does not fit, so a large request is never overtaken by smaller ones.
   */
  take(maxRows: number): T[] {
    const out: T[] = [];
    let rows = 0;
    for (const level of this.#levels) {
      const fifo = level.fifo;
      const items = fifo.items;
      let i = fifo.head;
      for (; i < items.length; i++) {
        const e = items[i] as T;
        if (e.state !== RequestState.Queued) continue; // left early (aborted, timed out, shed)
        if (rows + e.rows > maxRows) {
          fifo.advance(i);
          return this.#took(out, rows);
        }
        out.push(e);
        rows += e.rows;
      }
      fifo.advance(i);
    }
    return this.#took(out, rows);
  }

  /** Enqueue time of the oldest live entry (across priority levels), or `undefined` if empty. */
  oldestEnqueuedAt(): number | undefined {
    let oldest: number | undefined;
    for (const level of this.#levels) {
      const head = this.#liveHead(level.fifo);
      if (head !== undefined && (oldest === undefined || head.enqueuedAt < oldest)) oldest = head.enqueuedAt;
    }
    return oldest;
  }

  /**
   * The batching window that ends first over the priority levels that have live entries: each
   * level's oldest live entry's enqueue time plus `delayOf(level)`. `undefined` if empty.
   */
  earliestWindow(delayOf: (priority: number) => number): { end: number; delay: number } | undefined {
    let best: { end: number; delay: number } | undefined;
    for (const level of this.#levels) {
      const head = this.#liveHead(level.fifo);
      if (head === undefined) continue;
      const delay = delayOf(level.priority);
      const end = head.enqueuedAt + delay;
      if (best === undefined || end < best.end) best = { end, delay };
    }
    return best;
  }

  /** Earliest deadline among live entries (`Infinity` if none has one). O(size). */
  earliestDeadline(): number {
    let earliest = Infinity;
    for (const level of this.#levels) {
      const { items, head } = level.fifo;
      for (let i = head; i < items.length; i++) {
        const e = items[i] as T;
        if (e.state === RequestState.Queued && e.deadline < earliest) earliest = e.deadline;
      }
    }
    return earliest;
  }

  /** Live entries in priority order, as a new array (does not remove them). */
  live(): T[] {
    const out: T[] = [];
    for (const level of this.#levels) {
      const { items, head } = level.fifo;
      for (let i = head; i < items.length; i++) {
        const e = items[i] as T;
        if (e.state === RequestState.Queued) out.push(e);
      }
    }
    return out;
  }

  /**
   * Live entries in priority order, read as they are iterated (nothing is copied): a policy that
   * reads the head of a long queue at every decision pays for the head only. Valid until the queue
   * next changes.
   */
  walk(): IterableIterator<T> {
    return new LiveWalk(this.#levels);
  }

  /** Removes and returns every live entry. */
  clear(): T[] {
    const all = this.live();
    this.#levels = [];
    this.#size = 0;
    this.#rows = 0;
    return all;
  }

  #took(out: T[], rows: number): T[] {
    this.#size -= out.length;
    this.#rows -= rows;
    return out;
  }

  #liveHead(fifo: Fifo<T>): T | undefined {
    let head = fifo.peek();
    while (head !== undefined && head.state !== RequestState.Queued) {
      fifo.shift();
      head = fifo.peek();
    }
    return head;
  }

  #level(priority: number): Level<T> {
    const levels = this.#levels;
    for (let i = 0; i < levels.length; i++) {
      const level = levels[i] as Level<T>;
      if (level.priority === priority) return level;
      if (level.priority < priority) {
        const created = { priority, fifo: new Fifo<T>() };
        levels.splice(i, 0, created);
        return created;
      }
    }
    const created = { priority, fifo: new Fifo<T>() };
    levels.push(created);
    return created;
  }
}

/**
 * The iterator behind {@link RequestQueue.walk}: a plain class rather than a generator, since a
 * policy reads the queue at every decision and two nested generators cost more than a short
 * decision itself.
 */
class LiveWalk<T extends Queueable> implements IterableIterator<T> {
  #level = 0;
  #items: T[] | undefined;
  #i = 0;

  constructor(private readonly levels: readonly Level<T>[]) {
    this.#enter();
  }

  next(): IteratorResult<T> {
    for (;;) {
      const items = this.#items;
      if (items === undefined) return { done: true, value: undefined };
      while (this.#i < items.length) {
        const e = items[this.#i++] as T;
        if (e.state === RequestState.Queued) return { done: false, value: e };
      }
      this.#level++;
      this.#enter();
    }
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this;
  }

  #enter(): void {
    const level = this.levels[this.#level];
    this.#items = level?.fifo.items;
    this.#i = level?.fifo.head ?? 0;
  }
}
