import type { ResolvedOptions } from '../core/options';
import type { Executor } from '../executors/executor';
import { runPipeline, type PipelineConfig } from './pipeline';
import type { Reporter } from './reporting';
import { isError } from '../core/describe';
import { warmupFailed } from './settle-errors';

const NONE: readonly unknown[] = Object.freeze([]);

/** What a warm-up needs from its host (its {@link Settlement}). @internal */
export interface WarmupHost {
  readonly pipeline: PipelineConfig<unknown, unknown, unknown, unknown>;
  readonly options: Pick<ResolvedOptions, 'name' | 'clock' | 'warmup'>;
  readonly reporter: Reporter;
  queued(): number;
}

/**
 * Gets `executor` ready to take traffic: starts it, then, with the `warmup` option, runs the
 * warm-up batches on it through the host's pipeline. What `start()` does for the first executor
 * and `reload()` for each next one. Throws the first failure.
 * @internal
 */
export async function prepareExecutor(executor: Executor<unknown, unknown>, host: WarmupHost): Promise<void> {
  await executor.start?.();
  const warmup = host.options.warmup;
  if (warmup === undefined) return;
  const pipeline = { ...host.pipeline, run: (batch: unknown) => executor.run(batch) };
  await runWarmup({ pipeline, options: host.options, reporter: host.reporter, queued: () => host.queued() }, warmup);
}

/**
 * Runs one batch of each warm-up size through the host's own pipeline (batcher, executor, checks),
 * one after another, before the host takes traffic. Batches are reported (reason `'warmup'`) but
 * stay out of the stats and the policy: they are not traffic, and first runs are slow on purpose.
 * Throws the first failure, so that `start()` fails instead of serving a model that cannot run.
 */
async function runWarmup(host: WarmupHost, warmup: { readonly samples: readonly unknown[]; readonly batchSizes: readonly number[] }): Promise<void> {
  const { samples, batchSizes } = warmup;
  const batcher = host.pipeline.batcher;
  for (const size of batchSizes) {
    const items = Array.from({ length: size }, (_, i) => samples[i % samples.length]);
    let rows = size;
    if (batcher.rows !== undefined) {
      rows = 0;
      for (const item of items) rows += batcher.rows(item);
    }
    const startedAt = host.options.clock.now();
    const result = await runPipeline(host.pipeline, items, true);
    const bad = result.results.find(isError);
    if (bad !== undefined) {
      throw warmupFailed(host.options.name, size, bad);
    }
    if (host.reporter.batches) {
      host.reporter.batch({
        host: host.options.name,
        rows,
        requests: size,
        reason: 'warmup',
        queueWaitOldestMs: 0,
        queueWaitMeanMs: 0,
        mergeMs: result.mergeMs,
        runMs: result.runMs,
        splitMs: result.splitMs,
        modelCalls: result.modelCalls,
        paddingWaste: result.padding,
        succeeded: size,
        failed: 0,
        queued: host.queued(),
        startedAt,
        contexts: NONE,
      });
    }
  }
}
