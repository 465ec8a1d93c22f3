import { DeadlineExceededError, QueueFullError } from '../../src/core/errors';
import { HTTP_STATUS, toHttpError } from '../../src/http';
import { decodeRequest, encodeBinary, ServingError, ServingRegistry, toServingError, type InferenceServable, type ServingErrorCode } from '../../src/serving';

const linear: InferenceServable = {
  name: 'linear',
  model: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 1], batchAxis: 0 }] },
  options: { maxBatchSize: 4 },
  inference: async (feeds) => ({ Y: { type: 'float32', data: new Float32Array(feeds.X!.dims[0] as number), dims: [feeds.X!.dims[0] as number, 1] } }),
  stop: async () => undefined,
};

test('a transport of its own decodes raw tensor bytes (as gRPC raw_input_contents) with the serving core alone', () => {
  const raw = encodeBinary('FP32', Float32Array.of(1, 2, 3, 4));
  const request = decodeRequest(
    { id: 'r1', inputs: [{ name: 'X', datatype: 'FP32', shape: [2, 2], parameters: { binary_data_size: raw.length } }] },
    { modelName: 'linear', host: linear, maxElements: 100, binary: raw },
  );
  expect(request.id).toBe('r1');
  expect(request.feeds.X).toEqual({ type: 'float32', data: Float32Array.of(1, 2, 3, 4), dims: [2, 2] });
  const error = (() => {
    try {
      decodeRequest({ inputs: [{ name: 'X', datatype: 'FP32', shape: [5, 2], data: new Array(10).fill(0) }] }, { modelName: 'linear', host: linear, maxElements: 100, binary: undefined });
    } catch (e) {
      return e;
    }
  })();
  expect(error).toBeInstanceOf(ServingError);
  expect(error).toMatchObject({ code: 'invalid-argument', reason: 'wrong_shape' });
});

test('failures become codes, and every code has its HTTP status', () => {
  expect(toServingError(new QueueFullError('m', 1))).toMatchObject({ code: 'unavailable', reason: 'queue_full', retry: true });
  expect(toServingError(new DeadlineExceededError('late', 'timeout', 'queued', 10))).toMatchObject({ code: 'deadline-exceeded', reason: 'deadline_exceeded', retry: false });
  expect(toServingError(new Error('boom'))).toMatchObject({ code: 'internal', reason: 'model_error', message: 'the model failed: boom' });
  const codes: ServingErrorCode[] = ['invalid-argument', 'not-found', 'cancelled', 'resource-exhausted', 'internal', 'unimplemented', 'unavailable', 'deadline-exceeded'];
  expect(codes.map((c) => HTTP_STATUS[c])).toEqual([400, 404, 499, 413, 500, 501, 503, 504]);
  const http = toHttpError(new ServingError('unavailable', 'model_loading', 'still loading', { retry: true }), 3);
  expect([http.status, http.code, http.message, http.headers]).toEqual([503, 'model_loading', 'still loading', { 'Retry-After': '3' }]);
});

test('one registry serves models and generators: one 404 lists both, a loading one is unavailable (retry)', async () => {
  const failures: string[] = [];
  const registry = new ServingRegistry('test', (name, e) => failures.push(`${name}: ${e.message}`));
  registry.add('linear', linear, 'model');
  let resolve!: (v: unknown) => void;
  registry.add('writer', new Promise((r) => (resolve = r)), 'generator');
  expect(registry.kindOf('writer')).toBe('generator');
  expect(registry.states()).toEqual({ linear: 'ready', writer: 'loading' });
  expect(() => registry.get('writer')).toThrow(expect.objectContaining({ code: 'unavailable', reason: 'model_loading', retry: true }));
  expect(() => registry.get('nope')).toThrow('no model named "nope"; the served models are "linear", "writer"');
  expect(() => registry.add('linear', linear, 'generator')).toThrow(TypeError);
  resolve({});
  await registry.settled();
  expect(registry.states()).toEqual({ linear: 'ready', writer: 'failed' });
  expect(failures).toEqual(['writer: generator "writer" resolved to an object, not a GenerationHost (with generate() and stop()) or { host, tokenizer? }']);
});
