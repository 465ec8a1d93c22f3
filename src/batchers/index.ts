/**
 * Batchers (`microbatch/batchers`): how requests are merged into one batch and the output split
 * back, with every option and context type, the `Batcher` contract for writing your own, and the
 * tensor helpers they build on. The five batchers and `Batcher` are also in the package root.
 * @packageDocumentation
 * @module microbatch/batchers
 */
export { BucketBatcher } from './bucket-batcher';
export type { BucketBatcherOptions } from './bucket-batcher';
export { ConcatBatcher } from './concat-batcher';
export type { ConcatBatcherOptions, ConcatContext, Shape } from './concat-batcher';
export { DictBatcher } from './dict-batcher';
export type { DictBatcherOptions, DictContext, KeyAxis } from './dict-batcher';
export { ListBatcher } from './list-batcher';
export type { ListBatcherOptions } from './list-batcher';
export { PadBatcher } from './pad-batcher';
export type { PadBatcherOptions, PadContext, PadInput, PadValue } from './pad-batcher';
export { TensorInputError } from './tensor-input-error';
export type { TensorInput, TensorRecord } from './tensor-items';
export type { Batcher, Merged, Partition } from '../core/batcher';
export { isTensorType, TENSOR_TYPES } from '../tensor/dtypes';
export type { TensorData, TensorType, TypedArray } from '../tensor/dtypes';
export { isTensorLike } from '../tensor/tensor-like';
export type { TensorFactory, TensorLike } from '../tensor/tensor-like';
