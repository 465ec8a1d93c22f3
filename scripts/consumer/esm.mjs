// An ES module consumer: named imports from the CommonJS build, the Proxy style, a subpath.
import assert from 'node:assert/strict';
import { Proxy, DeadlineExceededError } from 'microbatch';
import { createInferenceServer } from 'microbatch/http';
import { GenerationProxy, greedyToken } from 'microbatch/generate';
import { connectHost, serveHost } from 'microbatch/socket';

class Upper extends Proxy {
  calls = 0;
  constructor() {
    super({ maxBatchSize: 16 });
  }
  async _inference(texts) {
    this.calls++;
    return texts.map((t) => (t === '' ? new TypeError('empty text') : t.toUpperCase()));
  }
}

const model = new Upper();
const results = await Promise.allSettled(['a', 'b', '', 'c'].map((t) => model.inference(t)));
assert.deepEqual(
  results.map((r) => (r.status === 'fulfilled' ? r.value : r.reason.message)),
  ['A', 'B', 'empty text', 'C'],
);
assert.equal(model.calls, 1);
await model.close();
assert.equal(typeof DeadlineExceededError, 'function');
assert.equal(typeof createInferenceServer, 'function');
assert.equal(greedyToken([0.1, 2.5, 0.3]), 1);
assert.equal(typeof GenerationProxy, 'function');
assert.equal(typeof serveHost, 'function');
assert.equal(typeof connectHost, 'function');
console.log('esm consumer: ok');
