/**
 * The subclass style: extend `Proxy<In, Out>`, pass the options to `super()`, and implement
 * `_inference(batch)`. Concurrent `inference()` calls share one `_inference` call; an `Error` in
 * place of a result rejects only that caller. Run: npx ts-node examples/proxy-subclass.ts
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Proxy } from 'microbatch';

// A bag-of-words linear model: the word weights are its only parameters.
const WEIGHTS: Readonly<Record<string, number>> = {
  great: 2, good: 1.5, love: 2, fun: 1.2, best: 2.2, brilliant: 2.5,
  dull: -1.8, bad: -1.5, boring: -2, awful: -2.5, worst: -2.2, waste: -2,
};
const VOCAB = Object.keys(WEIGHTS);

/** P(positive) for a text, from 0 to 1. */
class Sentiment extends Proxy<string, number> {
  /** Items per `_inference` call, in call order; only for this example's report. */
  readonly batchSizes: number[] = [];

  constructor() {
    super({ maxBatchSize: 32 });
  }

  protected async _inference(texts: readonly string[]): Promise<Array<number | Error>> {
    this.batchSizes.push(texts.length);
    // Stands in for the fixed cost of one real model call (a session.run, a GPU launch), which is
    // what batching amortises; it also keeps the model busy long enough to show deadlines below.
    await sleep(20);
    // Featurise the whole batch into one [texts, vocab] count matrix, then one matrix-vector
    // product with the weights: the shape of work a real model does per call.
    const counts = new Float64Array(texts.length * VOCAB.length);
    texts.forEach((text, i) => {
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        const j = VOCAB.indexOf(word);
        if (j >= 0) counts[i * VOCAB.length + j]! += 1;
      }
    });
    return texts.map((text, i) => {
      // A bad item gets an Error in its slot, so its batch-mates still get their scores.
      if (text.trim() === '') return new TypeError('cannot score an empty text');
      let logit = 0;
      VOCAB.forEach((word, j) => (logit += counts[i * VOCAB.length + j]! * WEIGHTS[word]!));
      return 1 / (1 + Math.exp(-logit));
    });
  }
}

const REVIEWS = ['a great cast and a brilliant script', 'dull and boring', 'good fun', 'the worst film, a waste of time', 'I love it'];

async function main(): Promise<void> {
  const p = new Sentiment();
  const show = (r: PromiseSettledResult<number>): string => (r.status === 'fulfilled' ? r.value.toFixed(3) : `${r.reason.name}: ${r.reason.message}`);

  // 100 concurrent callers, each sending one text; item 41 is empty.
  const texts = Array.from({ length: 100 }, (_, i) => (i === 41 ? '' : REVIEWS[i % REVIEWS.length]!));
  const settled = await Promise.allSettled(texts.map((t) => p.inference(t)));
  console.log(`${texts.length} requests served by ${p.batchSizes.length} model calls (batch sizes ${p.batchSizes.join(', ')})`);
  settled.forEach((r, i) => {
    if (i < 3 || r.status === 'rejected') console.log(`request ${i} "${texts[i]}" → ${show(r)}`);
  });

  // Per-request deadlines. A backlog of 64 keeps the model busy for two calls (about 40 ms).
  const backlog = Promise.allSettled(texts.slice(0, 64).map((t) => p.inference(t)));
  const late = p.inference('great', { timeoutMs: 5 }); // leaves the queue when 5 ms pass
  const patient = p.inference('great', { timeoutMs: 1000 });
  const controller = new AbortController();
  const cancelled = p.inference('boring', { signal: controller.signal });
  controller.abort(new Error('the client went away')); // still queued: it never runs
  const [a, b, c] = await Promise.allSettled([late, patient, cancelled]);
  console.log(`timeoutMs 5 → ${show(a)}`);
  console.log(`timeoutMs 1000 → ${show(b)}`);
  console.log(`aborted → ${show(c)} (cause: ${c.status === 'rejected' ? c.reason.cause.message : 'none'})`);
  await backlog;

  await p.close(); // answers everything accepted, then stops; later calls reject
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
