import type { Clock } from '../core/clock';
import { isError } from '../core/describe';
import { runPipeline, type PipelineConfig } from './pipeline';
import type { Reporter } from './reporting';

const NONE: readonly unknown[] = Object.freeze([]);

/** What a warm-up needs from its host. @internal */
export interface WarmupHost {
  readonly pipeline: PipelineConfig<unknown, unknown, unknown, unknown>;
  readonly name: string;
  readonly reporter: Reporter;
  readonly clock: Clock;
  queued(): number;
}

/**
 * Runs one batch of each warm-up size through the host's own pipeline (batcher, executor, checks),
 * one after another, before the host takes traffic. Batches are reported (reason `'warmup'`) but
 * stay out of the stats and the policy: they are not traffic, and first runs are slow on purpose.
 * Throws the first failure, so that `start()` fails instead of serving a model that cannot run.
 * @internal
 */
export async function runWarmup(host: WarmupHost, warmup: { readonly samples: readonly unknown[]; readonly batchSizes: readonly number[] }): Promise<void> {
  const { samples, batchSizes } = warmup;
  const batcher = host.pipeline.batcher;
  for (const size of batchSizes) {
    const items = Array.from({ length: size }, (_, i) => samples[i % samples.length]);
    let rows = size;
    if (batcher.rows !== undefined) {
      rows = 0;
      for (const item of items) rows += batcher.rows(item);
    }
    const startedAt = host.clock.now();
    const result = await runPipeline(host.pipeline, items, true);
    const bad = result.results.find(isError);
    if (bad !== undefined) {
      throw new Error(`${host.name}: the warm-up batch of ${size} failed, so the host does not start: ${bad.message}`, { cause: bad });
    }
    if (host.reporter.batches) {
      host.reporter.batch({
        host: host.name,
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
