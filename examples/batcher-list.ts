/**
 * ListBatcher (the default): the batch function gets the requests as an array and answers with an
 * array, one result or Error per request, in order. `rows` lets a request that is itself a small
 * batch count as several rows against maxBatchSize. Run: npx ts-node examples/batcher-list.ts
 */
import { ListBatcher, ModelHost } from 'microbatch';

// A stand-in for a text model: each request is a list of sentences, each answer their word counts.
async function wordCounts(requests: readonly string[][]): Promise<Array<number[] | Error>> {
  const sentences = requests.reduce((n, r) => n + r.length, 0);
  console.log(`model called once with ${requests.length} requests (${sentences} sentences)`);
  // An Error in a slot rejects only that caller; the others still get their answers.
  return requests.map((r) => (r.some((s) => s.trim() === '') ? new RangeError('an empty sentence has no words') : r.map((s) => s.trim().split(/\s+/).length)));
}

async function main(): Promise<void> {
  const host = new ModelHost(wordCounts, {
    maxBatchSize: 8, // counts sentences, not requests, because of `rows`
    batcher: new ListBatcher<string[], number[]>({ rows: (sentences) => sentences.length }),
  });
  const results = await Promise.allSettled([
    host.inference(['the cat sat', 'on the mat']),
    host.inference(['hello world']),
    host.inference(['fine', '   ']),
    host.inference(Array.from({ length: 9 }, () => 'too many')), // 9 rows > maxBatchSize: refused alone
  ]);
  results.forEach((r, i) => console.log(`request ${i} →`, r.status === 'fulfilled' ? r.value : `${r.reason.name}: ${r.reason.message}`));
  await host.stop();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
