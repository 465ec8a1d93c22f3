import { Proxy } from '../../src/api/proxy';
import type { Merged } from '../../src/core/batcher';
import { HostStoppedError } from '../../src/core/errors';

class Sentiment extends Proxy<string, number> {
  readonly batches: string[][] = [];
  constructor(maxBatchSize = 64) {
    super({ maxBatchSize });
  }
  protected async _inference(texts: readonly string[]): Promise<Array<number | Error>> {
    this.batches.push([...texts]);
    return texts.map((t) => (t === '' ? new TypeError('empty text') : t.includes('great') ? 1 : 0));
  }
}

describe('Proxy subclass style', () => {
  test('concurrent calls share one _inference call and each gets its own result', async () => {
    const p = new Sentiment();
    const results = await Promise.all(['great movie', 'dull', 'great cast'].map((t) => p.inference(t)));
    expect(results).toEqual([1, 0, 1]);
    expect(p.batches).toEqual([['great movie', 'dull', 'great cast']]);
    expect(p.stats).toMatchObject({ batches: 1, requests: 3 });
    await p.close();
  });

  test('per-item errors reject only their caller; predict is an alias', async () => {
    const p = new Sentiment();
    const [bad, good] = await Promise.allSettled([p.inference(''), p.predict('great')]);
    expect(bad).toEqual({ status: 'rejected', reason: new TypeError('empty text') });
    expect(good).toEqual({ status: 'fulfilled', value: 1 });
    await p.close();
  });

  test('close drains, later calls reject, and errors are named after the subclass', async () => {
    const p = new Sentiment(2);
    const pending = ['a', 'b', 'c'].map((t) => p.inference(t));
    await p.close();
    await expect(Promise.all(pending)).resolves.toEqual([0, 0, 0]);
    await expect(p.inference('x')).rejects.toThrow(new HostStoppedError('Sentiment: the host is stopped (or stopping) and accepts no new requests'));
  });

  test('configure, onIdle, start and await using work through the proxy', async () => {
    let proxy: Sentiment | undefined;
    {
      await using p = new Sentiment(1);
      proxy = p;
      await p.start();
      p.configure({ maxBatchSize: 3 });
      const all = Promise.all(['1', '2', '3', '4'].map((t) => p.inference(t)));
      await p.onIdle();
      await all;
      expect(p.batches.map((b) => b.length)).toEqual([3, 1]);
    }
    await expect(proxy.inference('late')).rejects.toBeInstanceOf(HostStoppedError);
  });

  test('an anonymous subclass is named Proxy in messages', async () => {
    const p = new (class extends Proxy<number, number> {
      protected async _inference(xs: readonly number[]) {
        return xs;
      }
    })(2);
    await p.close();
    await expect(p.inference(1)).rejects.toThrow('Proxy: the host is stopped (or stopping) and accepts no new requests');
  });

  test('with a batcher, _inference receives the merged batch', async () => {
    class Joiner extends Proxy<string, string, string, string> {
      constructor() {
        super({
          maxBatchSize: 8,
          batcher: {
            merge: (items: readonly string[]): Merged<string, number> => ({ batch: items.join('\n'), ctx: items.length }),
            split: (out: string) => out.split('\n'),
          },
        });
      }
      protected async _inference(text: string): Promise<string> {
        return text.toUpperCase();
      }
    }
    const j = new Joiner();
    await expect(Promise.all(['ab', 'cd'].map((s) => j.inference(s)))).resolves.toEqual(['AB', 'CD']);
    await j.close();
  });
});
