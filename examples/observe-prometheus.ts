/**
 * `npx ts-node examples/observe-prometheus.ts`: a host with Prometheus metrics. Sends a burst of
 * requests to a fake model (2 ms + 0.1 ms per row), then prints what a Prometheus server would
 * scrape from `/metrics`.
 */
import { Registry } from 'prom-client';
import { ModelHost } from 'microbatch';
import { prometheusMetrics } from 'microbatch/prometheus';

async function main(): Promise<void> {
  // Your own registry: the adapter never writes into prom-client's global one unless you pass it.
  const registry = new Registry();
  const prom = prometheusMetrics({ registry, maxBatchSize: 16 });

  const model = async (texts: readonly string[]): Promise<number[]> => {
    await new Promise((r) => setTimeout(r, 2 + 0.1 * texts.length));
    return texts.map((t) => t.length);
  };
  const host = new ModelHost(model, { name: 'sentiment', maxBatchSize: 16, observer: prom.observer });
  const unwatch = prom.watch(host); // queue depth and batches in flight, read at every scrape

  // A burst of 100 concurrent callers, then 20 more arriving one by one.
  await Promise.all(Array.from({ length: 100 }, (_, i) => host.inference(`review ${i}`)));
  for (let i = 0; i < 20; i++) await host.inference(`late review ${i}`);
  await host.inference('x', { timeoutMs: 0.001 }).catch(() => undefined); // shows up as outcome="timeout"

  console.log(await registry.metrics());
  await host.stop();
  unwatch();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
