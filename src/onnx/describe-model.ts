import type { InferenceSession } from 'onnxruntime-node';
import { describe } from '../core/describe';
import type { TensorSignature } from '../core/servable';

/** Where a tensor's batch lies: an axis index, or `'shared'` (not batched: one value for the whole batch). */
export type BatchAxis = number | 'shared';

/**
 * One input or output of a model, as {@link describeModel} reads it (`dtype` is `'non-tensor'`
 * for sequence/map values; `batchAxis` is the detected or overridden batch axis).
 * @deprecated Use `TensorSignature` (from `microbatch`), the one tensor-signature type.
 */
export type TensorDescription = TensorSignature;

/** Why a model cannot be batched (see {@link ModelDescription.unbatchable}). */
export interface UnbatchableReason {
  /** The input that rules batching out. */
  readonly input: string;
  /** Its declared dims. */
  readonly dims: ReadonlyArray<number | string>;
  /** A sentence saying what is wrong. */
  readonly message: string;
}

/** What {@link describeModel} returns. */
export interface ModelDescription {
  /** The inputs, in the model's order. */
  readonly inputs: readonly TensorSignature[];
  /** The outputs, in the model's order. */
  readonly outputs: readonly TensorSignature[];
  /** The symbolic dimension taken as the batch (e.g. `'N'`, `'batch'`), if any. */
  readonly batchDim: string | undefined;
  /**
   * Set when the model cannot take batches larger than 1: no input has a symbolic dimension, or
   * an input's batch dimension is fixed to 1 (as many exported models are). Such a model still
   * runs one request at a time (`createOnnxHost(..., { maxBatchSize: 1 })`).
   */
  readonly unbatchable: UnbatchableReason | undefined;
}

/** Options of {@link describeModel}. */
export interface DescribeModelOptions {
  /**
   * Batch axes you know better than the detection, by input or output name: an axis index, or
   * `'shared'` for an input that is the same for the whole batch. The axis must be symbolic.
   * @default {} (detect every axis)
   * @example `{ batchAxes: { h: 1, c: 1, sr: 'shared' } }`
   */
  batchAxes?: Readonly<Record<string, BatchAxis>>;
}

/** The part of an `InferenceSession` that {@link describeModel} reads. */
export type SessionMetadata = Pick<InferenceSession, 'inputMetadata' | 'outputMetadata'>;

/** Names that say "batch" (checked case-insensitively) win ties between symbolic dims. */
const BATCH_LIKE = /^(n|b|bs)$|batch/i;

/**
 * Reads a session's input and output metadata and finds each one's batch axis, without running
 * the model. The rules, in order:
 *
 * 1. An axis in `batchAxes` wins (it must name a symbolic dim, or be `'shared'`).
 * 2. An input with no symbolic dimension (a scalar such as a sample rate, a fixed-size table) is
 *    `'shared'`: it is fed once per batch and must be equal across the batch's requests.
 * 3. The batch dimension is the symbolic name found in the most inputs (`batch` in Silero VAD's
 *    `input [batch, sequence]`, `h [2, batch, 64]`, `c [2, batch, 64]`); ties go to a name that
 *    reads like a batch (`N`, `B`, `batch`, `batch_size`), then to the lowest axis. Each input
 *    that has it is batched along it; an input without it, along its first symbolic dim.
 * 4. An input whose first dim is the number 1 and that has other, symbolic dims (`[1, L]`) is
 *    read as a batch fixed to 1 at export, not as a batch along `L`, unless it holds the batch
 *    dimension found from the other inputs. With no symbolic input at all, or such a fixed input,
 *    the model is {@link ModelDescription.unbatchable}.
 * 5. Outputs use the batch dimension where they have it, else their first symbolic dim, else
 *    `'shared'`.
 *
 * Symbolic dims are strings, as onnxruntime reports them (`'N'`, `'p2o.DynamicDimension.0'`). An
 * input whose shape the model leaves undeclared reads as `[]`, hence `'shared'`: name its axis in
 * `batchAxes`.
 *
 * @param session - an `InferenceSession` (or anything with its `inputMetadata`/`outputMetadata`).
 * @param options - overrides; see {@link DescribeModelOptions}.
 *
 * @example
 * ```ts
 * const session = await loadSession('silero_vad.onnx');
 * const d = describeModel(session);
 * // d.batchDim === 'batch'; axes: input 0, sr 'shared', h 1, c 1; outputs: output 0, hn 1, cn 1
 * ```
 */
export function describeModel(session: SessionMetadata, options: DescribeModelOptions = {}): ModelDescription {
  const where = 'describeModel';
  if (session === null || typeof session !== 'object' || !Array.isArray(session.inputMetadata) || !Array.isArray(session.outputMetadata)) {
    throw new TypeError(`${where}: expected an InferenceSession (with inputMetadata and outputMetadata), got ${describe(session)}`);
  }
  const inputs = session.inputMetadata.map(read);
  const outputs = session.outputMetadata.map(read);
  const overrides = checkOverrides(where, options, inputs, outputs);

  // The batch dim: an override that names a symbolic dim fixes it; otherwise vote over the inputs.
  let batchDim: string | undefined;
  for (const t of [...inputs, ...outputs]) {
    const axis = overrides.get(t.name);
    if (typeof axis === 'number' && batchDim === undefined) batchDim = t.dims[axis] as string;
  }
  const free = inputs.filter((t) => !overrides.has(t.name) && symbolicAxes(t.dims).length > 0);
  const clean = free.filter((t) => t.dims[0] !== 1);
  batchDim ??= vote(clean);

  let unbatchable: UnbatchableReason | undefined;
  const inputAxes = inputs.map((t): BatchAxis => {
    const forced = overrides.get(t.name);
    if (forced !== undefined) return forced;
    const sym = symbolicAxes(t.dims);
    if (sym.length === 0) return 'shared';
    const at = batchDim === undefined ? -1 : t.dims.indexOf(batchDim);
    if (at >= 0) return at;
    if (t.dims[0] === 1) {
      unbatchable ??= {
        input: t.name,
        dims: t.dims,
        message: `input "${t.name}" has dims ${formatDims(t.dims)}: its batch dimension is fixed to 1`,
      };
      return 'shared';
    }
    return sym[0] as number;
  });
  if (unbatchable === undefined && !inputAxes.some((a) => a !== 'shared')) {
    const first = inputs.find((t) => t.dims[0] === 1) ?? inputs[0];
    unbatchable =
      first === undefined
        ? { input: '', dims: [], message: 'the model has no inputs to batch' }
        : {
            input: first.name,
            dims: first.dims,
            message:
              first.dims[0] === 1
                ? `input "${first.name}" has dims ${formatDims(first.dims)}: its batch dimension is fixed to 1, and no input has a symbolic (dynamic) dimension`
                : `no input has a symbolic (dynamic) dimension to batch along (input "${first.name}" has dims ${formatDims(first.dims)})`,
          };
  }

  const outputAxes = outputs.map((t): BatchAxis => {
    const forced = overrides.get(t.name);
    if (forced !== undefined) return forced;
    const at = batchDim === undefined ? -1 : t.dims.indexOf(batchDim);
    if (at >= 0) return at;
    return symbolicAxes(t.dims)[0] ?? 'shared';
  });

  return {
    inputs: inputs.map((t, i) => ({ ...t, batchAxis: inputAxes[i] as BatchAxis })),
    outputs: outputs.map((t, i) => ({ ...t, batchAxis: outputAxes[i] as BatchAxis })),
    batchDim: unbatchable === undefined ? batchDim : undefined,
    unbatchable,
  };
}

/** `[N, 3, 48, 192]`: dims as the messages print them. @internal */
function formatDims(dims: ReadonlyArray<number | string>): string {
  return `[${dims.join(', ')}]`;
}

type Read = Omit<TensorSignature, 'batchAxis'>;

function read(m: InferenceSession.ValueMetadata): Read {
  if (!m.isTensor) return { name: m.name, dtype: 'non-tensor', dims: [] };
  return { name: m.name, dtype: m.type, dims: [...m.shape] };
}

function symbolicAxes(dims: ReadonlyArray<number | string>): number[] {
  const out: number[] = [];
  dims.forEach((d, i) => {
    if (typeof d === 'string') out.push(i);
  });
  return out;
}

/** The symbolic name in the most inputs; ties: batch-like name, then lowest axis, then first seen. */
function vote(inputs: readonly Read[]): string | undefined {
  const score = new Map<string, { count: number; axis: number; order: number }>();
  for (const t of inputs) {
    const seen = new Set<string>();
    t.dims.forEach((d, axis) => {
      if (typeof d !== 'string' || seen.has(d)) return;
      seen.add(d);
      const s = score.get(d);
      if (s === undefined) score.set(d, { count: 1, axis, order: score.size });
      else {
        s.count++;
        s.axis = Math.min(s.axis, axis);
      }
    });
  }
  let best: string | undefined;
  let bestKey: number[] = [];
  for (const [name, s] of score) {
    // Larger is better, compared left to right.
    const key = [s.count, BATCH_LIKE.test(name) ? 1 : 0, -s.axis, -s.order];
    if (best === undefined || greater(key, bestKey)) {
      best = name;
      bestKey = key;
    }
  }
  return best;
}

function greater(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    if ((a[i] as number) !== (b[i] as number)) return (a[i] as number) > (b[i] as number);
  }
  return false;
}

function checkOverrides(where: string, options: DescribeModelOptions, inputs: readonly Read[], outputs: readonly Read[]): Map<string, BatchAxis> {
  const out = new Map<string, BatchAxis>();
  if (options === null || typeof options !== 'object') throw new TypeError(`${where}: expected options to be an object, got ${describe(options)}`);
  const given = options.batchAxes;
  if (given === undefined) return out;
  if (given === null || typeof given !== 'object') {
    throw new TypeError(`${where}: expected \`batchAxes\` to be an object { name: axis | 'shared' }, got ${describe(given)}`);
  }
  const all = [...inputs, ...outputs];
  for (const [name, axis] of Object.entries(given)) {
    const t = all.find((x) => x.name === name);
    if (t === undefined) {
      throw new TypeError(`${where}: \`batchAxes\` names "${name}", which the model does not have; its inputs and outputs are ${all.map((x) => `"${x.name}"`).join(', ')}`);
    }
    if (axis === 'shared') {
      out.set(name, axis);
      continue;
    }
    if (typeof axis !== 'number' || !Number.isInteger(axis) || axis < 0 || axis >= t.dims.length) {
      throw new RangeError(
        `${where}: \`batchAxes.${name}\` must be 'shared' or an axis from 0 to ${t.dims.length - 1} of dims ${formatDims(t.dims)}, got ${describe(axis)}`,
      );
    }
    if (typeof t.dims[axis] !== 'string') {
      throw new RangeError(
        `${where}: \`batchAxes.${name}\` is ${axis}, but axis ${axis} of "${name}" ${formatDims(t.dims)} is fixed to ${String(t.dims[axis])}; ` +
          'only a symbolic (dynamic) dimension can hold a batch',
      );
    }
    out.set(name, axis);
  }
  return out;
}
