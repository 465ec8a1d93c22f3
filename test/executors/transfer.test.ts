import { Tensor } from 'onnxruntime-node';
import { MessageChannel } from 'node:worker_threads';
import { DeadlineExceededError } from '../../src/core/errors';
import { decodeFromPost, encodeForPost, reviveTensorDefault } from '../../src/executors/worker/transfer';
import { reviveError, serializeError } from '../../src/executors/worker/wire-error';

// What crosses a thread boundary, checked through a real MessageChannel.

function cross(value: unknown, transfer: boolean): Promise<unknown> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port2.once('message', (m) => {
      port1.close();
      resolve(decodeFromPost(m, reviveTensorDefault));
    });
    const encoded = encodeForPost(value, transfer);
    port1.postMessage(encoded.value, encoded.transferList);
  });
}

test('moving detaches the sender\'s buffers once each; shared memory is never listed; copies leave them alone', async () => {
  const row = new Float32Array([1, 2, 3, 4]);
  const shared = new Float32Array(new SharedArrayBuffer(8));
  const { transferList } = encodeForPost([row, row.subarray(2), { shared }], true);
  expect(transferList).toEqual([row.buffer]);

  const copied = new Float32Array([5, 6]);
  const back = (await cross([copied], false)) as Float32Array[];
  expect(Array.from(back[0]!)).toEqual([5, 6]);
  expect(copied.length).toBe(2);

  const moved = new Float32Array([7, 8]);
  const after = (await cross([moved], true)) as Float32Array[];
  expect(Array.from(after[0]!)).toEqual([7, 8]);
  expect(moved.length).toBe(0); // detached: the bytes moved instead of being copied
});

test('onnxruntime tensors come back as tensors; shared-memory tensor data is copied into a regular buffer', async () => {
  const t = new Tensor('float32', new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  const sab = new Float32Array(new SharedArrayBuffer(8));
  const [tensor, plain] = (await cross([t, { type: 'float32', data: sab, dims: [2] }], false)) as [Tensor, { data: Float32Array }];
  expect(tensor).toBeInstanceOf(Tensor);
  expect(tensor.dims).toEqual([2, 3]);
  expect(Array.from(tensor.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(plain.data.buffer).toBeInstanceOf(ArrayBuffer);
});

test('errors keep class, message, stack, properties and cause, at any position', async () => {
  const deadline = new DeadlineExceededError('too slow', 'batch-timeout', 'running', 12);
  const custom = Object.assign(new Error('bad row', { cause: new TypeError('inner') }), { name: 'RowError', code: 'E_ROW' });
  const [a, b] = (await cross([deadline, { nested: custom }], false)) as [DeadlineExceededError, { nested: Error & { code: string } }];
  expect(a).toBeInstanceOf(DeadlineExceededError);
  expect(a).toMatchObject({ message: 'too slow', reason: 'batch-timeout', phase: 'running', elapsedMs: 12 });
  expect(a.stack).toBe(deadline.stack);
  expect(b.nested).toBeInstanceOf(Error);
  expect(b.nested).toMatchObject({ name: 'RowError', message: 'bad row', code: 'E_ROW' });
  expect(b.nested.cause).toBeInstanceOf(TypeError);
  expect(Object.prototype.toString.call(b.nested)).toBe('[object Error]');
  expect(reviveError(serializeError('a string'))).toMatchObject({ message: 'a non-Error value was thrown: "a string"' });
});
