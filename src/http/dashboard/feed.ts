import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS, type BatchEvent, type RequestEvent } from '../../core/observer';
import type { SequenceEvent } from '../../generate/events';
import { servedVersion, type ServingRegistry, type StatsCollector } from '../../serving';
import { HostWindow, type WindowSummary } from './window';

/** One served model at one tick, as the page receives it. @internal */
export interface ModelTick {
  /** The name in URLs. */
  readonly name: string;
  readonly kind: 'model' | 'generator';
  /** `ready`, `loading`, `failed` or `unavailable`. */
  readonly state: string;
  /** The version served now; `null` until loaded. */
  readonly version: string | null;
  /** The host's `options.maxBatchSize`; `null` when it has none. */
  readonly maxBatchSize: number | null;
  /** `host.stats.queued` now (waiting prompts, for a generator). */
  readonly queued: number;
  /** `host.stats.runningBatches` now (0 without it). */
  readonly runningBatches: number;
  /** `host.stats.running` now: requests in running batches, or running sequences. */
  readonly running: number;
  /** Requests settled since the server started, whichever way: `/stats`' success + fail counts. */
  readonly requests: number;
  /** Of them, answered: `/stats`' `inference_stats.success.count`. */
  readonly ok: number;
  /** Successful executions by rows, `[size, count]` ascending: `/stats`' `batch_stats`. */
  readonly batchSizes: ReadonlyArray<readonly [number, number]>;
  /** `host.stats.rejected` (a `ModelHost`'s refusals by cause since it started), when it has them. */
  readonly rejected: Readonly<Record<string, number>> | null;
  /** A generator's `stats.tokens` (generated since it started), else `null`. */
  readonly tokens: number | null;
  /** What its events said since the previous tick. */
  readonly window: WindowSummary;
}

/** What the page receives each tick. @internal */
export interface DashboardTick {
  /** `Date.now()` at the tick. */
  readonly t: number;
  readonly models: readonly ModelTick[];
}

interface HostStatsLike {
  readonly queued?: number;
  readonly running?: number;
  readonly runningBatches?: number;
  readonly rejected?: Readonly<Record<string, number>>;
  readonly tokens?: number;
}

const EMPTY = new HostWindow().take();

/**
 * The dashboard's data: totals read at each tick from what `/stats` and `host.stats` read (so the
 * page and those answers agree), and the tick's rates and percentiles from the hosts' own
 * `diagnostics_channel` events, subscribed to only while a page watches (`watch()` until the undo
 * it returns): with nobody watching, a host does no work for the dashboard.
 * @internal
 */
export class DashboardFeed {
  readonly #registry: ServingRegistry;
  readonly #stats: StatsCollector;
  readonly #windows = new Map<string, HostWindow>();
  #watchers = 0;
  readonly #onBatch = (message: unknown): void => {
    const e = message as BatchEvent;
    this.#window(e.host).batch(e.reason, e.runMs);
  };
  readonly #onRequest = (message: unknown): void => {
    const e = message as RequestEvent;
    this.#window(e.host).request(e.outcome, e.rows, e.queueMs);
  };
  readonly #onSequence = (message: unknown): void => {
    const e = message as SequenceEvent;
    if (e.tokens > 0) this.#window(e.host).ttftMs.push(e.timeToFirstTokenMs); // none without a first token
  };

  constructor(registry: ServingRegistry, stats: StatsCollector) {
    this.#registry = registry;
    this.#stats = stats;
  }

  /** True while at least one page watches. */
  get watched(): boolean {
    return this.#watchers > 0;
  }

  /** Starts listening to the hosts' events (on the first watcher); the returned function stops (on the last). */
  watch(): () => void {
    if (this.#watchers++ === 0) {
      subscribe(CHANNELS.batch, this.#onBatch);
      subscribe(CHANNELS.request, this.#onRequest);
      subscribe(CHANNELS.refused, this.#onRequest);
      subscribe(CHANNELS.sequence, this.#onSequence);
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--this.#watchers > 0) return;
      unsubscribe(CHANNELS.batch, this.#onBatch);
      unsubscribe(CHANNELS.request, this.#onRequest);
      unsubscribe(CHANNELS.refused, this.#onRequest);
      unsubscribe(CHANNELS.sequence, this.#onSequence);
      this.#windows.clear();
    };
  }

  /** Every served name now, with the events since the previous tick (which this call starts afresh). */
  tick(): DashboardTick {
    const states = this.#registry.states();
    const models = this.#registry.names().map((name) => this.#model(name, states[name] ?? 'failed'));
    for (const w of this.#windows.values()) w.take(); // hosts no name serves: their events are dropped
    return { t: Date.now(), models };
  }

  #window(host: string): HostWindow {
    let w = this.#windows.get(host);
    if (w === undefined) this.#windows.set(host, (w = new HostWindow()));
    return w;
  }

  #model(name: string, state: string): ModelTick {
    const kind = this.#registry.kindOf(name) ?? 'model';
    const base = { name, kind, state, version: null, maxBatchSize: null, queued: 0, runningBatches: 0, running: 0, requests: 0, ok: 0, batchSizes: [], rejected: null, tokens: null, window: EMPTY };
    if (state !== 'ready' && state !== 'unavailable') return base;
    const { host } = this.#registry.get(name);
    const version = servedVersion(host);
    const live = (host.stats ?? {}) as HostStatsLike;
    const window = host.name === undefined ? EMPTY : (this.#windows.get(host.name)?.take() ?? EMPTY);
    const common = { ...base, version, maxBatchSize: host.options?.maxBatchSize ?? null, queued: live.queued ?? 0, running: live.running ?? 0, window };
    if (kind === 'generator') return { ...common, tokens: live.tokens ?? null };
    const s = this.#stats.stats(name, version, host);
    const i = s.inference_stats;
    return {
      ...common,
      runningBatches: live.runningBatches ?? 0,
      requests: i.success.count + i.fail.count,
      ok: i.success.count,
      batchSizes: s.batch_stats.map((b) => [b.batch_size, b.compute_infer.count] as const),
      rejected: live.rejected === undefined ? null : { ...live.rejected },
    };
  }
}
