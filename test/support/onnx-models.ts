/**
 * ONNX models generated at test time with onnx-proto (no binary model is committed). Each builder
 * returns the serialized model bytes, ready for `InferenceSession.create(bytes)`. The basic ones
 * (linear, MLP) and the builders' building blocks live with the examples, which use them too.
 */
import { onnx } from 'onnx-proto';
import { encodeModel, floatInit, int64Init, linearModel, seeded, valueInfo } from '../../examples/support/models';

export { encodeModel, floatInit, int64Init, linearModel, linearReference, mlpModel, seeded, valueInfo } from '../../examples/support/models';
export type { Dim } from '../../examples/support/models';

const { DataType } = onnx.TensorProto;

// ---- models for the ONNX helpers (multi-input, int64, variable length, batch axis 1, fixed batch) ----


/** Sums of a float array, for the references below. */
function sum(values: ArrayLike<number>): number {
  let acc = 0;
  for (let i = 0; i < values.length; i++) acc += values[i] as number;
  return acc;
}

/**
 * Three inputs, two outputs: `A [N, F]`, `B [N, F]` (float32, batched) and `scale []` (a float32
 * scalar with no batch axis, so it is shared by the whole batch) →
 * `S [N, F] = (A + B) · scale` and `P [N] = Σ_f A·B` (a row-wise dot product).
 * {@link multiIoReference} computes the same thing.
 */
export function multiIoModel(features = 3): Uint8Array {
  return encodeModel({
    name: 'multi-io',
    node: [
      { opType: 'Add', input: ['A', 'B'], output: ['AB'] },
      { opType: 'Mul', input: ['AB', 'scale'], output: ['S'] },
      { opType: 'Mul', input: ['A', 'B'], output: ['AxB'] },
      { opType: 'ReduceSum', input: ['AxB', 'axes1'], output: ['P'], attribute: [{ name: 'keepdims', i: 0, type: onnx.AttributeProto.AttributeType.INT }] },
    ],
    initializer: [int64Init('axes1', [1], [1])],
    input: [valueInfo('A', DataType.FLOAT, ['N', features]), valueInfo('B', DataType.FLOAT, ['N', features]), valueInfo('scale', DataType.FLOAT, [])],
    output: [valueInfo('S', DataType.FLOAT, ['N', features]), valueInfo('P', DataType.FLOAT, ['N'])],
  });
}

/** What {@link multiIoModel} computes for one row of `A` and `B`. */
export function multiIoReference(a: ArrayLike<number>, b: ArrayLike<number>, scale: number): { S: number[]; P: number } {
  const s: number[] = [];
  let p = 0;
  for (let i = 0; i < a.length; i++) {
    s.push(((a[i] as number) + (b[i] as number)) * scale);
    p += (a[i] as number) * (b[i] as number);
  }
  return { S: s, P: p };
}

/**
 * An int64 input and an int64 output: token ids `ids [N, L]` (int64) → an embedding lookup in a
 * seeded table `E [vocab, dim]` summed over the L tokens, `pooled [N, dim]` (float32), and
 * `doubled [N, L] = ids · 2` (int64). {@link int64Reference} computes both.
 */
export function int64Model(length = 4, vocab = 10, dim = 3, seed = 11): Uint8Array {
  return encodeModel({
    name: 'int64-embedding',
    node: [
      { opType: 'Gather', input: ['E', 'ids'], output: ['emb'] },
      { opType: 'ReduceSum', input: ['emb', 'axes1'], output: ['pooled'], attribute: [{ name: 'keepdims', i: 0, type: onnx.AttributeProto.AttributeType.INT }] },
      { opType: 'Mul', input: ['ids', 'two'], output: ['doubled'] },
    ],
    initializer: [floatInit('E', [vocab, dim], seeded(vocab * dim, seed)), int64Init('axes1', [1], [1]), int64Init('two', [], [2])],
    input: [valueInfo('ids', DataType.INT64, ['N', length])],
    output: [valueInfo('pooled', DataType.FLOAT, ['N', dim]), valueInfo('doubled', DataType.INT64, ['N', length])],
  });
}

/** What {@link int64Model} computes for one row of ids. */
export function int64Reference(ids: ArrayLike<bigint>, vocab = 10, dim = 3, seed = 11): { pooled: number[]; doubled: bigint[] } {
  const table = seeded(vocab * dim, seed);
  const pooled = new Array<number>(dim).fill(0);
  const doubled: bigint[] = [];
  for (let t = 0; t < ids.length; t++) {
    const id = Number(ids[t]);
    for (let d = 0; d < dim; d++) pooled[d] = (pooled[d] as number) + (table[id * dim + d] as number);
    doubled.push((ids[t] as bigint) * 2n);
  }
  return { pooled, doubled };
}

/** The per-position weight and bias of {@link varLengthModel}. */
export const VAR_LENGTH_WEIGHT = 2;
/** The per-position bias of {@link varLengthModel}: a padded zero becomes this, visibly. */
export const VAR_LENGTH_BIAS = 0.5;

/**
 * A variable-length axis: `X [N, L]` float32, both axes symbolic, →
 * `Y [N, L] = X · 2 + 0.5` (per position, so a zero of padding shows up as 0.5) and
 * `total [N] = Σ_L Y` (a reduction over L, which padding changes by 0.5 per padded position).
 * With `mask: true` there is a second input `mask [N, L]` (1 for real positions, 0 for padding)
 * and `total = Σ_L Y · mask`, which padding leaves unchanged. {@link varLengthReference} computes it.
 */
export function varLengthModel(options: { mask?: boolean } = {}): Uint8Array {
  const mask = options.mask === true;
  const node: onnx.INodeProto[] = [
    { opType: 'Mul', input: ['X', 'w'], output: ['Xw'] },
    { opType: 'Add', input: ['Xw', 'b'], output: ['Y'] },
  ];
  if (mask) node.push({ opType: 'Mul', input: ['Y', 'mask'], output: ['Ym'] });
  node.push({
    opType: 'ReduceSum',
    input: [mask ? 'Ym' : 'Y', 'axes1'],
    output: ['total'],
    attribute: [{ name: 'keepdims', i: 0, type: onnx.AttributeProto.AttributeType.INT }],
  });
  const input = [valueInfo('X', DataType.FLOAT, ['N', 'L'])];
  if (mask) input.push(valueInfo('mask', DataType.FLOAT, ['N', 'L']));
  return encodeModel({
    name: mask ? 'var-length-masked' : 'var-length',
    node,
    initializer: [floatInit('w', [], [VAR_LENGTH_WEIGHT]), floatInit('b', [], [VAR_LENGTH_BIAS]), int64Init('axes1', [1], [1])],
    input,
    output: [valueInfo('Y', DataType.FLOAT, ['N', 'L']), valueInfo('total', DataType.FLOAT, ['N'])],
  });
}

/** What {@link varLengthModel} computes for one unpadded row (mask or not, the same). */
export function varLengthReference(row: ArrayLike<number>): { Y: number[]; total: number } {
  const y = Array.from(row, (v) => v * VAR_LENGTH_WEIGHT + VAR_LENGTH_BIAS);
  return { Y: y, total: sum(y) };
}

/**
 * The batch on axis 1, as in time-major sequence models: `X [T, N, F]` (T symbolic too, named
 * `T`, so batch-axis detection has to prefer `N`) → `Y [T, N, G] = X · W` (batch on axis 1) and
 * `pooled [N, G] = Σ_T Y` (batch on axis 0). {@link timeMajorReference} computes one item.
 */
export function timeMajorModel(features = 3, outFeatures = 2, seed = 21): Uint8Array {
  return encodeModel({
    name: 'time-major',
    node: [
      { opType: 'MatMul', input: ['X', 'W'], output: ['Y'] },
      { opType: 'ReduceSum', input: ['Y', 'axes0'], output: ['pooled'], attribute: [{ name: 'keepdims', i: 0, type: onnx.AttributeProto.AttributeType.INT }] },
    ],
    initializer: [floatInit('W', [features, outFeatures], seeded(features * outFeatures, seed)), int64Init('axes0', [1], [0])],
    input: [valueInfo('X', DataType.FLOAT, ['T', 'N', features])],
    output: [valueInfo('Y', DataType.FLOAT, ['T', 'N', outFeatures]), valueInfo('pooled', DataType.FLOAT, ['N', outFeatures])],
  });
}

/**
 * What {@link timeMajorModel} computes for one item `x [T, 1, F]` given as `T` rows of `F`:
 * `Y` as `T` rows of `G`, and `pooled` (`G` values).
 */
export function timeMajorReference(steps: ReadonlyArray<ArrayLike<number>>, features = 3, outFeatures = 2, seed = 21): { Y: number[][]; pooled: number[] } {
  const w = seeded(features * outFeatures, seed);
  const y = steps.map((x) => {
    const out: number[] = [];
    for (let g = 0; g < outFeatures; g++) {
      let acc = 0;
      for (let f = 0; f < features; f++) acc += (x[f] as number) * (w[f * outFeatures + g] as number);
      out.push(acc);
    }
    return out;
  });
  const pooled = Array.from({ length: outFeatures }, (_, g) => sum(y.map((r) => r[g] as number)));
  return { Y: y, pooled };
}

/**
 * A model exported with its batch fixed to 1: `X [1, F]` → `Y [1, G]`, the same weights as
 * {@link linearModel} (so {@link linearReference} applies). It cannot take a batch larger than 1.
 */
export function fixedBatchModel(inFeatures = 4, outFeatures = 3, seed = 1): Uint8Array {
  return linearModel(inFeatures, outFeatures, seed, 1);
}
