import { invalidArgument, isKServeDatatype, type KServeDatatype } from '../serving';
import type { TensorData } from '../tensor/dtypes';
import type { InferTensorContents } from './messages';

type Field = keyof InferTensorContents;

/** The `InferTensorContents` field each datatype's elements travel in; FP16 has none (it travels raw only). */
const FIELD: Readonly<Record<KServeDatatype, Field | undefined>> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP16: undefined,
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
};

const FIELDS = Object.keys({
  bool_contents: 0,
  int_contents: 0,
  int64_contents: 0,
  uint_contents: 0,
  uint64_contents: 0,
  fp32_contents: 0,
  fp64_contents: 0,
  bytes_contents: 0,
} satisfies Record<Field, 0>) as Field[];

/**
 * The elements of one input's typed `contents`, in the JSON form the serving core's decoder checks
 * (numbers, booleans, decimal strings for 64-bit integers, text for BYTES), or the
 * `'invalid-argument'` error for elements in another datatype's field or a datatype with no field.
 * An unknown datatype gives no elements: the decoder reports the datatype itself.
 * @internal
 */
export function contentsData(input: string, datatype: unknown, contents: InferTensorContents | undefined): unknown[] {
  if (!isKServeDatatype(datatype)) return [];
  const field = FIELD[datatype];
  const filled = FIELDS.filter((f) => (contents?.[f]?.length ?? 0) > 0);
  const where = `input ${JSON.stringify(input)}`;
  if (field === undefined) {
    throw invalidArgument('invalid_request', `${where}: ${datatype} has no field in InferTensorContents; send its bytes in raw_input_contents`);
  }
  const wrong = filled.find((f) => f !== field);
  if (wrong !== undefined) throw invalidArgument('invalid_request', `${where}: datatype ${datatype} takes its elements in contents.${field}, but the request filled contents.${wrong}`);
  const values = contents?.[field] ?? [];
  // BYTES elements are text for the model (as the binary layout's are decoded).
  return field === 'bytes_contents' ? (values as Uint8Array[]).map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')) : values;
}

/**
 * Tensor data as typed `contents`, or `undefined` for a datatype with no field (FP16: the answer
 * then goes raw).
 * @internal
 */
export function tensorContents(datatype: KServeDatatype, data: TensorData): InferTensorContents | undefined {
  const field = FIELD[datatype];
  if (field === undefined) return undefined;
  const items = data as ArrayLike<unknown>;
  switch (field) {
    case 'bool_contents':
      return { bool_contents: Array.from(items, (v) => v === true || v === 1) };
    case 'int64_contents':
    case 'uint64_contents':
      return { [field]: Array.from(items, String) };
    case 'bytes_contents':
      return { bytes_contents: Array.from(items, (s) => Buffer.from(String(s), 'utf8')) };
    default:
      return { [field]: Array.from(items as ArrayLike<number>) };
  }
}
