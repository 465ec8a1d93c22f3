/**
 * One measurement for bench/batch-order.ts, run as its own process (compiled to JavaScript by the
 * parent, so that valgrind measures no TypeScript compiler): `inFlight clients total reps`.
 * An identity batch function behind the plain batcher (bench/serial-batcher.ts), batches of 64,
 * `clients` closed-loop callers (the harness's, as bench/overhead.ts drives its sides); one
 * warm-up repetition of `total` requests, then `reps`; prints the median requests/s as one JSON
 * line. Only Node's built-ins, the harness and the batcher: what cachegrind counts beyond start-up
 * is the batcher's and its callers' work.
 */
import { closedLoop } from './harness';
import { serialBatcher } from './serial-batcher';

const [inFlight, clients, total, reps] = process.argv.slice(2).map(Number) as [number, number, number, number];
const BATCH = 64;

async function once(): Promise<number> {
  const load = serialBatcher<number>(async (xs) => xs, BATCH, inFlight);
  return (await closedLoop({ clients, total, call: (i) => load(i) })).throughput;
}

void (async () => {
  await once();
  const r: number[] = [];
  for (let k = 0; k < reps; k++) r.push(await once());
  r.sort((a, b) => a - b);
  process.stdout.write(`${JSON.stringify({ throughput: r[r.length >> 1] })}\n`);
})();
