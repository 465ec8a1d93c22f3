/**
 * The worker side of `createWorkerGenerationHost`: the worker thread loads the user's module, makes
 * the generation model from its factory, and keeps every running sequence's state here, by id,
 * between steps. Each step message carries the sequences' ids and tokens (and a new sequence's
 * prompt), plus the ids that ended; the answer carries one chosen token per sequence. States and
 * scores never cross the thread boundary.
 * @internal
 */
import { ListBatcher } from '../batchers/list-batcher';
import type { Batcher } from '../core/batcher';
import { describe, toError } from '../core/describe';
import { runPipeline, type PipelineConfig } from '../engine/pipeline';
import { loadExport } from '../executors/worker/find-export';
import type { WorkerContext } from '../executors/worker/protocol';
import type { WorkerBatchObject } from '../executors/worker/worker-target';
import { greedy } from './generation-host';
import { stepToken, type StepInput, type StepOutput } from './options';

/**
 * What a worker module's factory returns for `createWorkerGenerationHost`: the step function and
 * what goes with it, which are functions and so must be made in the worker.
 *
 * @typeParam State - a sequence's state, kept in the worker.
 *
 * @example
 * ```ts
 * export default async function (ctx: WorkerContext): Promise<GenerationModel<DecoderState<Tensor>>> {
 *   const session = await InferenceSession.create(ctx.workerData as string, { intraOpNumThreads: ctx.intraOpNumThreads });
 *   return { step: (feeds) => session.run(feeds), batcher: new DecoderBatcher({ ... }), initialState: () => ({ ... }), stop: () => session.release() };
 * }
 * ```
 */
export interface GenerationModel<State = unknown, Batch = unknown, BatchOut = unknown> {
  /** One decode step over the running sequences (see `GenerationHost`). */
  step(batch: Batch): BatchOut | PromiseLike<BatchOut>;
  /** The state a new sequence starts from. */
  initialState(prompt: readonly number[]): State;
  /**
   * Merges the sequences' step inputs and splits the step's output.
   * @default the step receives the `StepInput` array and returns one `StepOutput` per sequence
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the batcher's context type is its own business
  batcher?: Batcher<StepInput<State>, StepOutput<State>, Batch, BatchOut, any>;
  /** Turns logits into a token. @default greedy */
  choose?(logits: ArrayLike<number>): number;
  /** Releases what the model holds (a session) when the host stops. @default none */
  stop?(): void | PromiseLike<void>;
}

/** What the main thread tells the worker. @internal */
export interface GenerationWorkerData {
  readonly module: string;
  readonly exportName: string;
  readonly data: unknown;
  readonly where: string;
}

/** One step, main thread → worker. @internal */
export interface WorkerStep {
  readonly steps: ReadonlyArray<{ readonly id: number; readonly token: number; readonly position: number; readonly prompt?: readonly number[] }>;
  /** Sequences that ended since the last step: their states are dropped. */
  readonly released: readonly number[];
}

/** One sequence's answer, worker → main thread: its token, or why it failed. @internal */
export type WorkerStepResult = { readonly token: number; readonly live: number } | Error;

interface Sequence {
  state: unknown;
  readonly promptLength: number;
}

export default async function generationWorker(ctx: WorkerContext<GenerationWorkerData>): Promise<WorkerBatchObject<WorkerStep, WorkerStepResult[]>> {
  const { module, exportName, data, where } = ctx.workerData;
  const exported = loadExport(module, exportName);
  const made = typeof exported === 'function' ? await (exported as (c: WorkerContext) => unknown)({ ...ctx, workerData: data }) : exported;
  const model = made as Partial<GenerationModel> | null;
  if (typeof model !== 'object' || model === null || typeof model.step !== 'function' || typeof model.initialState !== 'function') {
    throw new TypeError(`${where}: the export ${JSON.stringify(exportName)} of ${module} should make { step(batch), initialState(prompt), batcher?, choose?, stop? }, got ${describe(made)}`);
  }
  const m = model as GenerationModel;
  const choose = m.choose === undefined ? greedy : (logits: ArrayLike<number>) => (m.choose as (l: ArrayLike<number>) => number).call(m, logits);
  const batcher = (m.batcher ?? new ListBatcher()) as Batcher<StepInput<unknown>, StepOutput<unknown>, unknown, unknown>;
  const pipeline: PipelineConfig<StepInput<unknown>, StepOutput<unknown>, unknown, unknown> = { batcher, run: (b) => m.step(b), isolateErrors: false, now: () => 0, name: where };
  const sequences = new Map<number, Sequence>();

  return {
    async run(message) {
      for (const id of message.released) sequences.delete(id);
      const results: WorkerStepResult[] = new Array(message.steps.length);
      const inputs: Array<StepInput<unknown>> = [];
      const at: number[] = [];
      message.steps.forEach((s, i) => {
        let seq = sequences.get(s.id);
        if (seq === undefined) {
          if (s.position > 0) {
            // Its state was made by a worker that has since died; starting it afresh would decode garbage.
            results[i] = new Error(`${where}: the worker holds no state for this sequence (it was lost with the worker that ran its earlier steps)`);
            return;
          }
          try {
            seq = { state: m.initialState(s.prompt ?? []), promptLength: s.prompt?.length ?? 0 };
          } catch (e) {
            results[i] = toError(e, 'initialState');
            return;
          }
          sequences.set(s.id, seq);
        }
        inputs.push({ token: s.token, state: seq.state, position: s.position });
        at.push(i);
      });
      const out = inputs.length === 0 ? [] : (await runPipeline(pipeline, inputs, false)).results;
      out.forEach((r, k) => {
        const i = at[k] as number;
        const s = message.steps[i] as WorkerStep['steps'][number];
        const seq = sequences.get(s.id) as Sequence;
        if (r instanceof Error) {
          sequences.delete(s.id);
          results[i] = r;
          return;
        }
        seq.state = r.state;
        // A prompt token's output is not chosen from; the main thread ignores its token.
        const token = stepToken(r, s.position + 1 < seq.promptLength, choose, `${where}: the step's output for a sequence`);
        results[i] = token instanceof Error ? token : { token, live: sequences.size };
      });
      return results;
    },
    ...(m.stop === undefined ? {} : { stop: () => (m.stop as () => unknown).call(m) as Promise<void> }),
  };
}
