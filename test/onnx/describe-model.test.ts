import { type InferenceSession } from 'onnxruntime-node';
import { describeModel, loadSession, type SessionMetadata } from '../../src/onnx';
import { fixedBatchModel, int64Model, linearModel, multiIoModel, timeMajorModel, varLengthModel } from '../support/onnx-models';

const sessions: InferenceSession[] = [];
async function load(bytes: Uint8Array): Promise<InferenceSession> {
  const s = await loadSession(bytes);
  sessions.push(s);
  return s;
}
afterAll(async () => {
  for (const s of sessions) await s.release();
});

/** `{ name: batchAxis }` of the inputs and of the outputs, the easiest form to compare. */
function axes(d: ReturnType<typeof describeModel>): { inputs: Record<string, unknown>; outputs: Record<string, unknown> } {
  return {
    inputs: Object.fromEntries(d.inputs.map((t) => [t.name, t.batchAxis])),
    outputs: Object.fromEntries(d.outputs.map((t) => [t.name, t.batchAxis])),
  };
}

/** Fake metadata, for shapes no generated model has. */
function meta(inputs: Array<[string, Array<number | string>]>, outputs: Array<[string, Array<number | string>]> = []): SessionMetadata {
  const m = ([name, shape]: [string, Array<number | string>]): InferenceSession.ValueMetadata => ({ name, isTensor: true, type: 'float32', shape });
  return { inputMetadata: inputs.map(m), outputMetadata: outputs.map(m) };
}

test('batch on axis 0: the linear model', async () => {
  const d = describeModel(await load(linearModel()));
  expect(d).toEqual({
    inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 4], batchAxis: 0 }],
    outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 3], batchAxis: 0 }],
    batchDim: 'N',
    unbatchable: undefined,
  });
});

test('a shared scalar input next to two batched ones; multi-output', async () => {
  const d = describeModel(await load(multiIoModel()));
  expect(axes(d)).toEqual({ inputs: { A: 0, B: 0, scale: 'shared' }, outputs: { S: 0, P: 0 } });
  expect(d.inputs.find((t) => t.name === 'scale')!.dims).toEqual([]);
  expect(d.batchDim).toBe('N');
});

test('int64 input and output keep their dtype', async () => {
  const d = describeModel(await load(int64Model()));
  expect(d.inputs).toEqual([{ name: 'ids', dtype: 'int64', dims: ['N', 4], batchAxis: 0 }]);
  expect(d.outputs.map((t) => [t.dtype, t.batchAxis])).toEqual([
    ['float32', 0],
    ['int64', 0],
  ]);
});

test('batch on axis 1: the name N beats T, the lower axis', async () => {
  const d = describeModel(await load(timeMajorModel()));
  expect(axes(d)).toEqual({ inputs: { X: 1 }, outputs: { Y: 1, pooled: 0 } });
  expect(d.batchDim).toBe('N');
});

test('a variable-length axis is not taken for the batch; with a mask, N is in both inputs', async () => {
  expect(axes(describeModel(await load(varLengthModel())))).toEqual({ inputs: { X: 0 }, outputs: { Y: 0, total: 0 } });
  const masked = describeModel(await load(varLengthModel({ mask: true })));
  expect(axes(masked).inputs).toEqual({ X: 0, mask: 0 });
});

test('a batch fixed to 1 is unbatchable, naming the input and its dims', async () => {
  const d = describeModel(await load(fixedBatchModel()));
  expect(d.unbatchable).toEqual({
    input: 'X',
    dims: [1, 4],
    message: 'input "X" has dims [1, 4]: its batch dimension is fixed to 1, and no input has a symbolic (dynamic) dimension',
  });
  expect(d.batchDim).toBeUndefined();
  expect(axes(d)).toEqual({ inputs: { X: 'shared' }, outputs: { Y: 'shared' } });
});

test('[1, L] reads as a batch fixed to 1, not a batch along L', () => {
  const d = describeModel(meta([['tokens', [1, 'L']]], [['out', [1, 'L']]]));
  expect(d.unbatchable?.message).toBe('input "tokens" has dims [1, L]: its batch dimension is fixed to 1');
  expect(d.unbatchable?.input).toBe('tokens');
});

test('[1, batch, 64] follows the batch dimension the other inputs share', () => {
  const d = describeModel(meta([['x', ['batch', 'T']], ['state', [1, 'batch', 64]]]));
  expect(axes(d).inputs).toEqual({ x: 0, state: 1 });
  expect(d.unbatchable).toBeUndefined();
});

test('no symbolic dim anywhere, without a leading 1', () => {
  const d = describeModel(meta([['x', [4, 3]]]));
  expect(d.unbatchable?.message).toBe('no input has a symbolic (dynamic) dimension to batch along (input "x" has dims [4, 3])');
});

test('the most shared name wins, even over a batch-like name', () => {
  const d = describeModel(meta([['a', ['seq', 'batch']], ['b', ['seq', 3]]]));
  expect(d.batchDim).toBe('seq');
  expect(axes(d).inputs).toEqual({ a: 0, b: 0 });
});

test('batchAxes overrides detection and sets the batch dim for the rest', async () => {
  const d = describeModel(await load(timeMajorModel()), { batchAxes: { X: 0 } });
  expect(d.batchDim).toBe('T');
  expect(axes(d)).toEqual({ inputs: { X: 0 }, outputs: { Y: 0, pooled: 0 } }); // pooled has no T: its first symbolic dim (rule 5)
  const shared = describeModel(await load(multiIoModel()), { batchAxes: { B: 'shared', P: 'shared' } });
  expect(axes(shared)).toEqual({ inputs: { A: 0, B: 'shared', scale: 'shared' }, outputs: { S: 0, P: 'shared' } });
});

test('bad batchAxes are refused with the reason', async () => {
  const session = await load(linearModel());
  expect(() => describeModel(session, { batchAxes: { Z: 0 } })).toThrow(
    new TypeError('describeModel: `batchAxes` names "Z", which the model does not have; its inputs and outputs are "X", "Y"'),
  );
  expect(() => describeModel(session, { batchAxes: { X: 2 } })).toThrow(
    new RangeError("describeModel: `batchAxes.X` must be 'shared' or an axis from 0 to 1 of dims [N, 4], got 2 (number)"),
  );
  expect(() => describeModel(session, { batchAxes: { X: 1 } })).toThrow(
    new RangeError('describeModel: `batchAxes.X` is 1, but axis 1 of "X" [N, 4] is fixed to 4; only a symbolic (dynamic) dimension can hold a batch'),
  );
  expect(() => describeModel({} as SessionMetadata)).toThrow(TypeError);
});
