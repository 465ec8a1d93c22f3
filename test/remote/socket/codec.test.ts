import { Tensor } from 'onnxruntime-node';
import { decodeMessage, encodeMessage } from '../../../src/remote/wire/codec';
import { FrameDecoder, FrameTooLargeError } from '../../../src/remote/wire/framing';
import { QueueFullError } from '../../../src/core/errors';
import { reviveTensorDefault } from '../../../src/executors/worker/transfer';

// The socket framing on its own: what goes in comes out, whatever way the stream cuts it.

function roundTrip(value: unknown, chunkSize = Infinity): unknown {
  const bytes = Buffer.concat(encodeMessage({ t: 'req', id: 1 }, value));
  const decoder = new FrameDecoder(1 << 20);
  const frames = [];
  for (let at = 0; at < bytes.length; at += Math.min(chunkSize, bytes.length)) frames.push(...decoder.push(bytes.subarray(at, at + chunkSize)));
  expect(frames).toHaveLength(1);
  const msg = decodeMessage(frames[0]!, reviveTensorDefault);
  expect(msg).toMatchObject({ t: 'req', id: 1 });
  return msg.value;
}

test('typed arrays, tensors, strings and JSON-hostile values survive, even cut into 3-byte chunks', () => {
  const f32 = new Float32Array([1.5, -2, Math.PI]);
  const view = new Float64Array([9, 8, 7, 6]).subarray(1, 3); // a view with an offset
  const value = {
    text: 'héllo',
    f32,
    view,
    ids: new BigInt64Array([1n, -2n]),
    tensor: new Tensor('float32', new Float32Array([1, 2, 3, 4]), [2, 2]),
    words: new Tensor('string', ['a', 'b'], [2]),
    odd: [undefined, NaN, -0, Infinity, 12n, new Date(5)],
    escaped: { $mb: 'not a tag' },
    error: Object.assign(new QueueFullError('h', 3), { extra: 1 }),
  };
  for (const chunk of [Infinity, 3]) {
    const back = roundTrip(value, chunk) as typeof value;
    expect(back.text).toBe('héllo');
    expect(back.f32).toEqual(f32);
    expect(back.view).toEqual(new Float64Array([8, 7]));
    expect(back.ids).toEqual(new BigInt64Array([1n, -2n]));
    expect(back.tensor).toBeInstanceOf(Tensor);
    expect(back.tensor.dims).toEqual([2, 2]);
    expect(Array.from(back.tensor.data as Float32Array)).toEqual([1, 2, 3, 4]);
    expect(back.words.data).toEqual(['a', 'b']);
    expect(back.odd[0]).toBeUndefined();
    expect(back.odd[1]).toBeNaN();
    expect(Object.is(back.odd[2], -0)).toBe(true);
    expect(back.odd.slice(3)).toEqual([Infinity, 12n, new Date(5)]);
    expect(back.escaped).toEqual({ $mb: 'not a tag' });
    expect(back.error).toBeInstanceOf(QueueFullError);
    expect(back.error).toMatchObject({ maxQueueSize: 3, extra: 1, message: value.error.message });
  }
});

test('several frames in one chunk come out in order; a "__proto__" key stays data', () => {
  const a = encodeMessage({ t: 'res', id: 1 }, 'first');
  const b = encodeMessage({ t: 'res', id: 2 }, JSON.parse('{"__proto__": {"polluted": true}}'));
  const frames = new FrameDecoder(1 << 20).push(Buffer.concat([...a, ...b]));
  const [x, y] = frames.map((f) => decodeMessage(f, reviveTensorDefault));
  expect(x).toMatchObject({ id: 1, value: 'first' });
  expect(y!.id).toBe(2);
  expect(Object.getPrototypeOf(y!.value)).toBe(Object.prototype);
  expect(Object.getOwnPropertyDescriptor(y!.value, '__proto__')?.value).toEqual({ polluted: true });
  expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
});

test('values that cannot cross are refused with their path; oversized and inconsistent frames are refused', () => {
  expect(() => encodeMessage({ t: 'req', id: 1 }, { model: { run: () => 1 } })).toThrow(/cannot send function at the value\.model\.run/);
  expect(() => encodeMessage({ t: 'req', id: 1 }, new Map())).toThrow(/cannot send Map/);
  const big = Buffer.concat(encodeMessage({ t: 'req', id: 1 }, new Float32Array(2048)));
  expect(() => new FrameDecoder(1024).push(big)).toThrow(FrameTooLargeError);
  const frame = new FrameDecoder(1 << 20).push(big)[0]!;
  expect(() => decodeMessage({ header: frame.header, body: frame.body.subarray(4) }, reviveTensorDefault)).toThrow(/announces 8192 segment bytes but carries 8188/);
});
