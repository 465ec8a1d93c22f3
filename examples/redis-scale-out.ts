/**
 * Two model replicas and a front end sharing work through Redis (`microbatch/redis`). In
 * production each replica runs on its own machine and the front ends are your HTTP servers; here
 * all three live in one process so the example runs anywhere redis-server is installed.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx ts-node examples/redis-scale-out.ts
 *
 * Without REDIS_URL it starts a throwaway redis-server (Debian: apt-get install redis-server).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { ModelHost } from 'microbatch';
import { connectHost, serveHost } from 'microbatch/redis';

async function main(): Promise<void> {
  let url = process.env.REDIS_URL;
  let server: ReturnType<typeof spawn> | undefined;
  if (url === undefined) {
    const port = 6390 + Math.floor(Math.random() * 500);
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
    server.on('error', (e) => {
      console.error(`could not start redis-server (${e.message}); install it or set REDIS_URL`);
      process.exit(1);
    });
    server.stdout!.on('data', () => undefined);
    for (let i = 0; i < 100 && !(await reachable(port)); i++) await sleep(50);
    url = `redis://127.0.0.1:${port}`;
  }

  // A model that takes 20 ms per batch, whatever its size: batching is what makes it fast.
  const replica = (name: string): ModelHost<string, string> =>
    new ModelHost(
      async (texts: readonly string[]) => {
        await sleep(20);
        return texts.map((t) => `${t.toUpperCase()} (by ${name}, batch of ${texts.length})`);
      },
      { maxBatchSize: 16, name },
    );
  const hosts = [replica('replica-a'), replica('replica-b')];
  const served = await Promise.all(hosts.map((h) => serveHost(h, { url: url!, model: 'shout', consumer: h.name })));
  const front = await connectHost<string, string>({ url, model: 'shout', timeoutMs: 5_000 });

  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => front.inference(`request ${i}`)));
  console.log(`64 requests answered in ${Date.now() - started} ms; the first: ${answers[0]}`);
  for (const h of hosts) console.log(`${h.name}: ${h.stats.requests} requests in ${h.stats.batches} batches`);
  console.log(`front end: sent ${front.stats.sent}, answered ${front.stats.answered}, duplicates dropped ${front.stats.duplicatesDropped}`);

  await front.close();
  await Promise.all(served.map((s) => s.close()));
  await Promise.all(hosts.map((h) => h.stop()));
  if (server !== undefined) {
    server.kill();
    await once(server, 'exit');
  }
}

async function reachable(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
