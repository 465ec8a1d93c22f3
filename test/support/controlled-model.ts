/**
 * A batch function the test drives by hand: every call is recorded and stays pending until the
 * test completes it, so "the model is busy" is a state the test controls, not a timing accident.
 */
export interface Call<I, O> {
  readonly items: readonly I[];
  resolve(results: ReadonlyArray<O | Error>): void;
  reject(error: unknown): void;
}

export class ControlledModel<I, O> {
  readonly calls: Call<I, O>[] = [];

  readonly fn = (items: readonly I[]): Promise<ReadonlyArray<O | Error>> =>
    new Promise((resolve, reject) => {
      this.calls.push({ items: [...items], resolve, reject });
    });

  /** Sizes of every call so far. */
  get sizes(): number[] {
    return this.calls.map((c) => c.items.length);
  }

  /** The most recent call (throws if none, which is a test failure worth seeing). */
  get last(): Call<I, O> {
    const c = this.calls.at(-1);
    if (c === undefined) throw new Error('the model has not been called');
    return c;
  }

  /** Answers call `index` by mapping each item. */
  answer(index: number, map: (item: I) => O | Error): void {
    const call = this.calls[index];
    if (call === undefined) throw new Error(`no call #${index}; calls so far: ${this.calls.length}`);
    call.resolve(call.items.map(map));
  }
}

/** Lets the host's end-of-tick flush (promise job + nextTick) and settled promises run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Records how each promise ended, without unhandled rejections. */
export function track<T>(p: Promise<T>): { readonly state: 'pending' | 'resolved' | 'rejected'; readonly value?: T; readonly error?: Error } {
  const box: { state: 'pending' | 'resolved' | 'rejected'; value?: T; error?: Error } = { state: 'pending' };
  p.then(
    (value) => {
      box.state = 'resolved';
      box.value = value;
    },
    (error: Error) => {
      box.state = 'rejected';
      box.error = error;
    },
  );
  return box;
}
