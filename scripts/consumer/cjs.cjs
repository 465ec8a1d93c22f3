// A CommonJS consumer of the installed tarball: the root entry, a subpath, the optional-peer errors.
'use strict';
const assert = require('node:assert/strict');
const { ModelHost, ListBatcher, QueueFullError, HostStoppedError } = require('microbatch');

async function main() {
  const sizes = [];
  const host = new ModelHost(
    async (xs) => {
      sizes.push(xs.length);
      return xs.map((x) => x * 2);
    },
    { maxBatchSize: 8, batcher: new ListBatcher() },
  );
  const ys = await Promise.all([1, 2, 3, 4, 5].map((x) => host.inference(x)));
  assert.deepEqual(ys, [2, 4, 6, 8, 10]);
  assert.deepEqual(sizes, [5], 'five concurrent calls make one batch');
  await host.stop();
  await assert.rejects(host.inference(1), HostStoppedError);
  assert.equal(typeof QueueFullError, 'function');

  assert.equal(require('microbatch/package.json').name, 'microbatch');
  // The optional peers are not installed here: each subpath that needs one names it.
  assert.throws(() => require('microbatch/prometheus'), {
    message: 'microbatch/prometheus needs the prom-client package, which is not installed. Install it next to microbatch: npm install prom-client',
  });
  assert.throws(() => require('microbatch/otel'), {
    message: 'microbatch/otel needs the @opentelemetry/api package, which is not installed. Install it next to microbatch: npm install @opentelemetry/api',
  });
  await assert.rejects(require('microbatch/redis').connectHost({ url: 'redis://127.0.0.1:1', model: 'm' }), {
    message: 'microbatch/redis needs the redis package, which is not installed. Install it next to microbatch: npm install redis',
  });
  const onnx = require('microbatch/onnx'); // loads: onnxruntime-node is required only when used
  await assert.rejects(onnx.loadSession(new Uint8Array([1, 2, 3])), {
    message: 'microbatch/onnx needs the onnxruntime-node package, which is not installed. Install it next to microbatch: npm install onnxruntime-node',
  });
  assert.equal(typeof require('microbatch/http').createInferenceServer, 'function');
  // gRPC's packages are optional peers: the entry loads, the server says what to install.
  const fake = { name: 'm', model: { inputs: [], outputs: [] }, inference: async () => ({}), stop: async () => undefined };
  assert.throws(() => require('microbatch/grpc').createGrpcServer({ models: { m: fake } }), {
    message: 'microbatch/grpc needs the @grpc/grpc-js package, which is not installed. Install it next to microbatch: npm install @grpc/grpc-js',
  });
  assert.ok(require('fs').existsSync(require('microbatch/grpc').INFERENCE_PROTO), 'the service definition ships in the package');
  const read = require('microbatch/repository').readTextConfig('name: "m"\nmax_batch_size: 8', 'config.pbtxt');
  assert.equal(read.config.max_batch_size, 8, 'a Triton config.pbtxt reads in a consumer');
  // The subpaths of one concern each (the root keeps what the guides import from it).
  assert.equal(require('microbatch/batchers').ConcatBatcher, require('microbatch').ConcatBatcher);
  assert.equal(require('microbatch/policy').greedyPolicy, require('microbatch').greedyPolicy);
  assert.equal(typeof require('microbatch/generate').greedyToken, 'function');
  assert.equal(require('microbatch/generate').GenerationHost, require('microbatch').GenerationHost);
  assert.equal(require('microbatch/worker').WorkerExecutor, require('microbatch').WorkerExecutor);
  assert.equal(typeof require('microbatch/socket').serveHost, 'function');
  assert.equal(require('microbatch/socket').connectHost, require('microbatch').connectHost, 'the root keeps the socket pair as deprecated aliases');
  assert.equal(require('microbatch/redis').serveHostOnRedis, require('microbatch/redis').serveHost, 'the old Redis names stay as deprecated aliases');
  console.log('cjs consumer: ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
