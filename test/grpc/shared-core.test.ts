import { createInferenceServer, type ServableModel } from '../../src/http';
import { createGrpcServer, createServingCore } from '../../src/grpc';
import { ModelHost } from '../../src/engine/model-host';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { call, gate } from '../http/helpers';
import { Registry } from 'prom-client';
import { prometheusMetrics } from '../../src/observe/prometheus';
import { waitFor } from '../support/wait-for';
import { connect, f32Bytes, f32Values } from './client';

// One core served by HTTP and gRPC: concurrent calls of both transports wait in one host queue,
// run in the same batches, and every one is answered with its own rows.

type Feeds = Record<string, TensorLike>;

/** `X [N, 2]` → `Y = 2·X`; batches wait for the gate, and each batch's rows are recorded. */
function recordingHost(hold: { promise: Promise<void> }) {
  const batches: number[][][] = [];
  const host = new ModelHost<Feeds, Feeds>(
    async (items) => {
      await hold.promise;
      batches.push(items.map((f) => [...(f.X!.data as Float32Array)]));
      return items.map((f) => ({ Y: { type: 'float32', data: Float32Array.from(f.X!.data as Float32Array, (v) => v * 2), dims: f.X!.dims } }));
    },
    { maxBatchSize: 64, name: 'shared' },
  );
  Object.defineProperty(host, 'model', {
    value: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }] },
  });
  return { host: host as ModelHost<Feeds, Feeds> & ServableModel, batches };
}

test('mixed gRPC and HTTP calls land in shared batches; nothing is lost; statistics count both; metrics say which transport each came over', async () => {
  const hold = gate();
  const { host, batches } = recordingHost(hold);
  const core = createServingCore({ models: { shared: host } });
  const registry = new Registry();
  const unwatch = prometheusMetrics({ registry }).watch(host);
  const grpcServer = createGrpcServer({ core });
  const http = createInferenceServer({ core });
  const client = connect((await grpcServer.listen(0)).port);
  const { port } = await http.listen(0);
  try {
    // Row [1, k] marks a gRPC call, [2, k] an HTTP one.
    const n = 20;
    const viaGrpc = Array.from({ length: n }, (_, k) =>
      client.unary('ModelInfer', { model_name: 'shared', id: `g${k}`, inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [f32Bytes([1, k])] }).then((r) => f32Values(r.raw_output_contents[0])),
    );
    const viaHttp = Array.from({ length: n }, (_, k) =>
      call(port, 'POST', '/v2/models/shared/infer', { body: { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: [2, k] }] } }).then((r) => r.json().outputs[0].data as number[]),
    );
    // Every call waits in the one queue behind the first batch, which the gate holds.
    await waitFor(() => host.stats.running + host.stats.queued === 2 * n, 15_000);
    hold.open();
    expect(await Promise.all(viaGrpc)).toEqual(Array.from({ length: n }, (_, k) => [2, 2 * k]));
    expect(await Promise.all(viaHttp)).toEqual(Array.from({ length: n }, (_, k) => [4, 2 * k]));
    const mixed = batches.filter((b) => b.some((r) => r[0] === 1) && b.some((r) => r[0] === 2));
    expect(mixed.length).toBeGreaterThan(0);
    expect(batches.flat()).toHaveLength(2 * n);
    const { model_stats } = await client.unary('ModelStatistics', { name: 'shared' });
    expect(Number(model_stats[0].inference_count)).toBe(2 * n);
    expect(model_stats[0].batch_stats.map((b: { batch_size: string }) => Number(b.batch_size))).toEqual(batches.map((b) => b.length).sort((a, b) => a - b).filter((v, i, all) => all.indexOf(v) === i));
    expect((await call(port, 'GET', '/v2/models/shared/stats')).json().model_stats[0].inference_count).toBe(2 * n);
    // Where the host's requests came from: the transport label.
    const text = await registry.metrics();
    expect(text).toContain(`microbatch_transport_requests_total{host="shared",transport="grpc"} ${n}`);
    expect(text).toContain(`microbatch_transport_requests_total{host="shared",transport="http"} ${n}`);
  } finally {
    unwatch();
    hold.open();
    client.close();
    await Promise.all([grpcServer.close(), http.close()]);
    await core.close();
  }
});
