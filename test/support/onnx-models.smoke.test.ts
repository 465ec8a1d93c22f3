import { InferenceSession, Tensor } from 'onnxruntime-node';
import { linearModel, linearReference } from './onnx-models';

test('the generated linear model runs in onnxruntime and matches the JS reference', async () => {
  const session = await InferenceSession.create(linearModel());
  expect(session.inputNames).toEqual(['X']);
  const x = new Float32Array([1, 2, 3, 4, -1, 0, 0.5, 2]);
  const out = await session.run({ X: new Tensor('float32', x, [2, 4]) });
  const y = out.Y as Tensor;
  expect(y.dims).toEqual([2, 3]);
  const expected = [...linearReference(x.subarray(0, 4)), ...linearReference(x.subarray(4))];
  Array.from(y.data as Float32Array).forEach((v, i) => expect(v).toBeCloseTo(expected[i] as number, 5));
  await session.release();
});
