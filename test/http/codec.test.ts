import { decodeBinary, encodeBinary } from '../../src/serving/raw-data';
import { fromHalfBits, toHalfBits } from '../../src/serving/datatypes';
import { jsonData, parseJsonData } from '../../src/serving/json-data';
import { matchRoute } from '../../src/http/routes';
import { toHttpError } from '../../src/http/http-error';
import { AbortError, DeadlineExceededError, HostStoppedError, QueueFullError } from '../../src/core/errors';
import { TensorInputError } from '../../src/batchers/tensor-input-error';

// The pieces of the wire format, checked on their own: half floats, BYTES framing, exact 64-bit
// integers in JSON, and routing.

test('float16: known bit patterns both ways, round to nearest even, Inf and NaN', () => {
  const cases: Array<[number, number]> = [[0, 0x0000], [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff], [2 ** -24, 0x0001], [2 ** -14, 0x0400], [Infinity, 0x7c00], [-Infinity, 0xfc00]];
  for (const [value, bits] of cases) {
    expect(toHalfBits(value)).toBe(bits);
    expect(fromHalfBits(bits)).toBe(value);
  }
  expect(toHalfBits(1e6)).toBe(0x7c00); // overflow
  expect(toHalfBits(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to even (down)
  expect(toHalfBits(1 + 3 * 2 ** -11)).toBe(0x3c02); // a tie rounds to even (up)
  expect(Number.isNaN(fromHalfBits(toHalfBits(NaN)))).toBe(true);
  for (let bits = 0; bits < 0x7c00; bits += 37) expect(toHalfBits(fromHalfBits(bits))).toBe(bits); // every finite half survives
});

test('BYTES in the binary form: 4-byte little-endian lengths, UTF-8, and named framing errors', () => {
  const strings = ['', 'héllo', 'a'.repeat(300)];
  const bytes = encodeBinary('BYTES', strings);
  expect(bytes.readUInt32LE(0)).toBe(0);
  expect(bytes.readUInt32LE(4)).toBe(6);
  expect(decodeBinary('BYTES', bytes, 3)).toEqual(strings);
  expect(decodeBinary('BYTES', bytes, 2)).toMatch(/expected 2 BYTES elements, but \d+ bytes are left over/);
  expect(decodeBinary('BYTES', bytes, 4)).toBe('expected 4 BYTES elements for the shape, got 3');
  expect(decodeBinary('BYTES', bytes.subarray(0, 12), 3)).toMatch(/BYTES element 1 declares 6 bytes, but only 4 are left/);
  expect(decodeBinary('BYTES', Buffer.from([1, 0]), 1)).toMatch(/BYTES element 0 is cut short/);
});

test('fixed-size types cross the binary form unchanged, from unaligned offsets', () => {
  const x = BigInt64Array.from([-(2n ** 63n), 2n ** 62n + 1n, -1n]);
  const wire = Buffer.concat([Buffer.from([9]), encodeBinary('INT64', x)]); // offset 1: unaligned
  expect(decodeBinary('INT64', wire.subarray(1), 3)).toEqual(x);
  expect(decodeBinary('FP32', Buffer.alloc(7), 2)).toBe('expected 8 bytes of binary data (2 elements × 4 bytes of FP32), got 7');
});

test('JSON data: 64-bit integers exact both ways, ranges checked, non-finite floats as null', () => {
  const big = parseJsonData('INT64', ['-9223372036854775808', 9007199254740991, '9223372036854775807'], 3, 'input "ids"');
  expect(Array.from(big as BigInt64Array)).toEqual([-(2n ** 63n), 2n ** 53n - 1n, 2n ** 63n - 1n]);
  expect(jsonData('INT64', big, 'number')).toBe('[-9223372036854775808,9007199254740991,9223372036854775807]');
  expect(jsonData('INT64', big, 'string')).toBe('["-9223372036854775808","9007199254740991","9223372036854775807"]');
  expect(() => parseJsonData('INT64', [2 ** 60], 1, 'input "ids"')).toThrow(/input "ids": data element 0 must be an integer from .* \(a number up to 2\^53, or a decimal string\), got 1152921504606847000/);
  expect(() => parseJsonData('UINT64', ['-1'], 1, 'x')).toThrow(/data element 0 must be an integer from 0 to 18446744073709551615/);
  expect(() => parseJsonData('INT8', [128], 1, 'x')).toThrow(/must be an integer from -128 to 127, got 128/);
  expect(() => parseJsonData('BOOL', ['yes'], 1, 'x')).toThrow(/must be true or false/);
  expect(Array.from(parseJsonData('BOOL', [true, false, 1, 0], 4, 'x') as Uint8Array)).toEqual([1, 0, 1, 0]);
  expect(parseJsonData('BYTES', ['a', 'b'], 2, 'x')).toEqual(['a', 'b']);
  expect(jsonData('FP32', Float32Array.from([1.5, NaN, Infinity]), 'number')).toBe('[1.5,null,null]');
  expect(jsonData('FP16', Uint16Array.from([0x3c00, 0xc000]), 'number')).toBe('[1,-2]');
  expect(jsonData('BYTES', ['a"b'], 'number')).toBe('["a\\"b"]');
  expect(jsonData('BOOL', Uint8Array.from([1, 0]), 'number')).toBe('[true,false]');
});

test('routes: names decoded, query and trailing slash ignored, 405 lists the allowed methods', () => {
  expect(matchRoute('POST', '/v2/models/my%20model/infer?x=1')).toEqual({ kind: 'route', route: 'infer', model: 'my model', version: undefined, path: '/v2/models/my%20model/infer' });
  expect(matchRoute('GET', '/v2/models/m/')).toMatchObject({ kind: 'route', route: 'model', model: 'm' });
  expect(matchRoute('HEAD', '/v2/health/live')).toMatchObject({ kind: 'route', route: 'live' });
  expect(matchRoute('PUT', '/v2/health/ready')).toEqual({ kind: 'bad-method', allow: 'GET, HEAD', path: '/v2/health/ready' });
  expect(matchRoute('GET', '/v2/models/%E0%A4%A/infer')).toMatchObject({ kind: 'not-found' });
  expect(matchRoute('GET', '/v2/models/a/b/c')).toMatchObject({ kind: 'not-found' });
  expect(matchRoute('GET', '/v2/models/m/versions/1/ready')).toMatchObject({ kind: 'route', route: 'model-ready', model: 'm', version: '1' });
  expect(matchRoute('GET', '/v2')).toMatchObject({ kind: 'route', route: 'server-metadata' });
  expect(matchRoute('GET', '/v1/models/m')).toMatchObject({ kind: 'not-found' });
});

test('errors map to statuses, codes and Retry-After', () => {
  const map = (e: unknown) => {
    const h = toHttpError(e, 2);
    return [h.status, h.code, h.headers['Retry-After']];
  };
  expect(map(new QueueFullError('m', 4))).toEqual([503, 'queue_full', '2']);
  expect(map(new DeadlineExceededError('shed', 'shed', 'queued', 1))).toEqual([503, 'shed', '2']);
  expect(map(new DeadlineExceededError('late', 'timeout', 'queued', 1))).toEqual([504, 'deadline_exceeded', undefined]);
  expect(map(new DeadlineExceededError('slow batch', 'batch-timeout', 'running', 1))).toEqual([504, 'deadline_exceeded', undefined]);
  expect(map(new HostStoppedError('stopped'))).toEqual([503, 'model_stopped', '2']);
  expect(map(new AbortError('gone', undefined))).toEqual([499, 'client_closed_request', undefined]);
  expect(map(new TensorInputError('DictBatcher', 'input "X"', '2 dims', '3'))).toEqual([400, 'invalid_input', undefined]);
  expect(map(new RangeError('inside the model'))).toEqual([500, 'model_error', undefined]);
  expect(toHttpError('a string', 1).message).toBe('the model failed: a string');
});
