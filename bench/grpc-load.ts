/**
 * A gRPC load generator for bench/grpc.ts, run in its own process so that it never shares the
 * server's event loop: `concurrency` unary ModelInfer calls kept in flight (closed loop) over
 * `channels` connections, for `seconds`, each sending the same raw FP32 input. Prints one JSON
 * line: requests answered, errors, seconds, and latency p50/p99 in milliseconds.
 *
 *   node -r ts-node/register bench/grpc-load.ts PORT MODEL INPUT_NAME SHAPE(1,3,48,192) INPUT_FILE CONCURRENCY SECONDS [CHANNELS]
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INFERENCE_PROTO } from '../src/grpc';
import { percentileSorted } from './harness';

const [port, model, inputName, shape, inputFile, concurrency, seconds, channelCount = '4'] = process.argv.slice(2);
const definition = protoLoader.loadSync(INFERENCE_PROTO, { keepCase: true, longs: String, enums: String, oneofs: true });
const Service = (grpc.loadPackageDefinition(definition) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } }).inference.GRPCInferenceService;
// Separate subchannel pools: each client opens its own HTTP/2 connection, as wrk's do.
const clients = Array.from({ length: Number(channelCount) }, () => new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, 'grpc.max_receive_message_length': -1 }));
const request = { model_name: model, inputs: [{ name: inputName, datatype: 'FP32', shape: String(shape).split(',').map(Number) }], raw_input_contents: [readFileSync(String(inputFile))] };

type Infer = (req: unknown, cb: (e: grpc.ServiceError | null) => void) => void;
const once = (client: grpc.Client): Promise<boolean> => new Promise((resolve) => (client as unknown as { ModelInfer: Infer }).ModelInfer(request, (e) => resolve(e === null)));

async function main(): Promise<void> {
  // Warm the connections before the clock starts.
  await Promise.all(clients.map((c) => once(c)));
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + Number(seconds) * 1000;
  await Promise.all(
    Array.from({ length: Number(concurrency) }, async (_, i) => {
      const client = clients[i % clients.length] as grpc.Client;
      while (performance.now() < end) {
        const t0 = performance.now();
        if (await once(client)) latencies.push(performance.now() - t0);
        else errors++;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(JSON.stringify({ requests: latencies.length, errors, seconds: elapsed, p50: percentileSorted(latencies, 50), p99: percentileSorted(latencies, 99) }));
  for (const c of clients) c.close();
}

void main();
