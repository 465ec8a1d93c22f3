/**
 * Small ONNX models for the examples, generated in code with onnx-proto, so that no model file is
 * committed or downloaded. Each builder returns the serialized model bytes, ready for
 * `InferenceSession.create(bytes)` or `loadSession(bytes)`. In your own project you load your
 * model file instead; to run these examples there, `npm install onnx-proto` too.
 */
import { onnx } from 'onnx-proto';

const { DataType } = onnx.TensorProto;

/** A dimension: a number is fixed, a string is symbolic (dynamic). */
export type Dim = number | string;

/** A graph input or output declaration. */
export function valueInfo(name: string, elemType: number, dims: readonly Dim[]): onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

/** A float32 initializer (constant weight). */
export function floatInit(name: string, dims: readonly number[], values: ArrayLike<number>): onnx.ITensorProto {
  return { name, dims: [...dims], dataType: DataType.FLOAT, rawData: new Uint8Array(Float32Array.from(values).buffer) };
}

/** An int64 initializer (indices, axes, integer constants; opset 13 takes Unsqueeze/Squeeze axes as one). */
export function int64Init(name: string, dims: readonly number[], values: ArrayLike<number | bigint>): onnx.ITensorProto {
  const data = BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
  return { name, dims: [...dims], dataType: DataType.INT64, rawData: new Uint8Array(data.buffer) };
}

/** Serializes a graph into model bytes (opset 13, IR 8). */
export function encodeModel(graph: onnx.IGraphProto, opset = 13): Uint8Array {
  return onnx.ModelProto.encode({
    irVersion: 8,
    producerName: 'microbatch-tests',
    opsetImport: [{ domain: '', version: opset }],
    graph,
  }).finish();
}

/** Deterministic pseudo-random numbers in [-1, 1) (weights that differ per position). */
export function seeded(count: number, seed = 1): Float32Array {
  const out = new Float32Array(count);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

/**
 * `Y = X·W + B`: input `X [N, inFeatures]` float32 with a dynamic batch axis `N`, output
 * `Y [N, outFeatures]`. W and B are seeded pseudo-random weights; {@link linearReference}
 * computes the same thing in JS. A number for `batch` exports the model with that batch size fixed.
 */
export function linearModel(inFeatures = 4, outFeatures = 3, seed = 1, batch: Dim = 'N'): Uint8Array {
  return encodeModel({
    name: typeof batch === 'number' ? 'fixed-batch' : 'linear',
    node: [
      { opType: 'MatMul', input: ['X', 'W'], output: ['XW'] },
      { opType: 'Add', input: ['XW', 'B'], output: ['Y'] },
    ],
    initializer: [
      floatInit('W', [inFeatures, outFeatures], seeded(inFeatures * outFeatures, seed)),
      floatInit('B', [outFeatures], seeded(outFeatures, seed + 1)),
    ],
    input: [valueInfo('X', DataType.FLOAT, [batch, inFeatures])],
    output: [valueInfo('Y', DataType.FLOAT, [batch, outFeatures])],
  });
}

/** What {@link linearModel} computes for one row, in float64. */
export function linearReference(row: ArrayLike<number>, inFeatures = 4, outFeatures = 3, seed = 1): number[] {
  const w = seeded(inFeatures * outFeatures, seed);
  const b = seeded(outFeatures, seed + 1);
  const y: number[] = [];
  for (let j = 0; j < outFeatures; j++) {
    let acc = b[j] as number;
    for (let i = 0; i < inFeatures; i++) acc += (row[i] as number) * (w[i * outFeatures + j] as number);
    y.push(acc);
  }
  return y;
}

/**
 * A multi-layer perceptron: `X [N, sizes[0]]` → (MatMul + Add + Relu) per hidden layer → linear
 * output `Y [N, sizes.at(-1)]`. Heavy enough (with wide layers) that batching pays off on CPU.
 */
export function mlpModel(sizes: readonly number[] = [64, 256, 256, 10], seed = 7): Uint8Array {
  if (sizes.length < 2) throw new RangeError('mlpModel needs at least an input and an output size');
  const node: onnx.INodeProto[] = [];
  const initializer: onnx.ITensorProto[] = [];
  let prev = 'X';
  for (let l = 0; l + 1 < sizes.length; l++) {
    const [inF, outF] = [sizes[l] as number, sizes[l + 1] as number];
    const last = l + 2 === sizes.length;
    initializer.push(floatInit(`W${l}`, [inF, outF], seeded(inF * outF, seed + 2 * l).map((v) => v / Math.sqrt(inF))));
    initializer.push(floatInit(`B${l}`, [outF], seeded(outF, seed + 2 * l + 1)));
    node.push({ opType: 'MatMul', input: [prev, `W${l}`], output: [`M${l}`] });
    const added = last ? 'Y' : `A${l}`;
    node.push({ opType: 'Add', input: [`M${l}`, `B${l}`], output: [added] });
    if (!last) node.push({ opType: 'Relu', input: [added], output: [`H${l}`] });
    prev = `H${l}`;
  }
  return encodeModel({
    name: 'mlp',
    node,
    initializer,
    input: [valueInfo('X', DataType.FLOAT, ['N', sizes[0] as number])],
    output: [valueInfo('Y', DataType.FLOAT, ['N', sizes.at(-1) as number])],
  });
}
