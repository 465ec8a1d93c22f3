import type { BatchOutcome, LatencyModelView } from './policy';

/** Options of {@link LatencyModel}. */
export interface LatencyModelOptions {
  /**
   * Weight of the newest sample in each per-size running estimate. The first samples of a size are
   * averaged plainly (weight `1/count`) until that falls below this, so a size is usable at once and
   * still follows a model that speeds up or slows down later.
   * @default 0.2
   */
  alpha?: number;
  /**
   * How many standard deviations {@link LatencyModel.upper} adds for deadline decisions. 2 covers
   * about 97.5 % of run times of a roughly normal model; raise it for a jittery model.
   * @default 2
   */
  k?: number;
  /**
   * A per-size estimate counts at most this many samples in the line fit, so one size seen a
   * million times does not drown the others out.
   * @default 50
   */
  maxWeight?: number;
}

/** One row count's running estimate, as shown by {@link LatencyModel.toJSON}. */
export interface SizeEstimate {
  /** Rows in the batches this estimate describes. */
  readonly rows: number;
  /** Batches of this size seen. */
  readonly count: number;
  /** Running (EWMA) mean run time in milliseconds. */
  readonly meanMs: number;
  /** Running (EWMA) standard deviation of the run time in milliseconds. */
  readonly stdMs: number;
}

/** Everything a {@link LatencyModel} has learned, for logs and dashboards. */
export interface LatencyModelState {
  /** Batches learned from. */
  readonly samples: number;
  /**
   * How predictions are made: `'none'` (nothing learned), `'single-size'` (every batch so far
   * had the same size: proportional scaling above it, flat below it), `'line'` (`a + b·rows` fitted
   * over two or more sizes).
   */
  readonly fit: 'none' | 'single-size' | 'line';
  /** Fixed cost per batch `a` in milliseconds (`undefined` unless `fit` is `'line'`). */
  readonly interceptMs: number | undefined;
  /** Cost per row `b` in milliseconds (proportional scaling's slope when `fit` is `'single-size'`). */
  readonly perRowMs: number | undefined;
  /** Pooled relative spread (standard deviation / mean) used by {@link LatencyModel.upper}. */
  readonly relativeStd: number;
  /** The per-size estimates, by rows. */
  readonly sizes: readonly SizeEstimate[];
}

interface Slot {
  readonly rows: number;
  count: number;
  mean: number;
  variance: number;
}

/**
 * An online model of batch run time against rows, learned from whatever batches the host runs (it
 * never probes: no request is delayed to teach it). It keeps a running estimate per row count and
 * fits a line `a + b·rows` by weighted least squares over those estimates.
 *
 * Why both: per-size estimates are robust to any shape of curve but know nothing about sizes not
 * yet seen; the line generalises. When every batch so far had one size `s` (a closed loop of
 * `s` clients, say) a line is undetermined (BentoML's fit breaks there); the model then assumes
 * proportional scaling above `s` (`t(s)·rows/s`, an overestimate for any model with a fixed cost)
 * and `t(s)` below it (a smaller batch is not slower), both safe for deadline decisions.
 *
 * @example
 * ```ts
 * const m = new LatencyModel();
 * m.observe({ rows: 8, requests: 8, runMs: 12, ok: true });
 * m.observe({ rows: 16, requests: 16, runMs: 20, ok: true });
 * m.predict(32); // 36: a = 4 ms, b = 1 ms per row
 * ```
 */
export class LatencyModel implements LatencyModelView {
  readonly #alpha: number;
  readonly #k: number;
  readonly #maxWeight: number;
  readonly #sizes = new Map<number, Slot>();
  /** The same slots in first-seen order: the refit walks an array (a Map's entries allocate pairs). */
  readonly #slots: Slot[] = [];
  #samples = 0;
  #dirty = true;
  #a = 0;
  #b = 0;
  #fit: LatencyModelState['fit'] = 'none';
  #singleRows = 0;
  #singleMean = 0;
  #relStd = 0;

  /** @param options - smoothing and safety settings; see {@link LatencyModelOptions}. */
  constructor(options: LatencyModelOptions = {}) {
    this.#alpha = positive('alpha', options.alpha ?? 0.2, 1);
    this.#k = positive('k', options.k ?? 2, Infinity, true);
    this.#maxWeight = positive('maxWeight', options.maxWeight ?? 50, Infinity);
  }

  /** Batches learned from so far. */
  get samples(): number {
    return this.#samples;
  }

  /**
   * Learns from one finished batch. Failed batches are ignored: a batch that threw or timed out
   * ran for an unknown part of its real cost. Once six batches are learned, the first run time of a
   * size not seen yet counts at most 3× what the fit predicts for it (a stall of the machine must
   * not set a size's estimate, and through the line every other); later samples of a size are
   * clipped against its own estimate.
   */
  observe(outcome: BatchOutcome): void {
    if (!outcome.ok || !(outcome.rows >= 1) || !Number.isFinite(outcome.runMs) || outcome.runMs < 0) return;
    let runMs = outcome.runMs;
    let s = this.#sizes.get(outcome.rows);
    if (s === undefined) {
      // A size's first run time has no estimate of its own to be clipped against, and one taken in
      // a stall of the machine sets the size's mean, and through the line every prediction: live,
      // a wide MLP's first batch of 48 rows ran 24× slow in a 30 ms stall, the line then read its
      // full batch of 64 at 16.2 ms for 1.4, and at 30% load the backlog the stall left read as a
      // certain miss (38 requests a greedy host answered in time were refused, replayed on that
      // run's timeline). So it is taken at most `FIRST_SAMPLE_RATIO` times what the fit
      // predicts for it, once the fit rests on a few batches; a size truly that much slower is
      // learned from its next samples, which are averaged plainly.
      const expected = this.#samples >= FIRST_SAMPLE_AFTER ? this.predict(outcome.rows) : undefined;
      if (expected !== undefined) runMs = Math.min(runMs, FIRST_SAMPLE_RATIO * expected);
      s = { rows: outcome.rows, count: 0, mean: 0, variance: 0 };
      this.#sizes.set(outcome.rows, s);
      this.#slots.push(s);
    }
    s.count++;
    const w = Math.max(1 / s.count, this.#alpha);
    // Outliers are clipped before they enter the estimate: on a shared machine one batch in a
    // stretch of contention can take 2–3× its usual time, and an unclipped sample would raise the
    // spread (and with it every deadline decision) by most of that excess. A sustained change
    // still gets through, a clipped step at a time (the clip widens as the variance follows).
    if (s.count > CLIP_AFTER) {
      const limit = CLIP_SIGMAS * Math.max(Math.sqrt(s.variance), MIN_REL_SPREAD * s.mean);
      runMs = Math.min(s.mean + limit, Math.max(s.mean - limit, runMs));
    }
    const diff = runMs - s.mean;
    // West's incremental EWMA of mean and variance; with w = 1/count it is the plain mean and variance.
    s.mean += w * diff;
    s.variance = (1 - w) * (s.variance + w * diff * diff);
    this.#samples++;
    this.#dirty = true;
  }

  /** Predicted mean run time in milliseconds of a batch of `rows` rows (`undefined` before any data). */
  predict(rows: number): number | undefined {
    this.#refit();
    switch (this.#fit) {
      case 'none':
        return undefined;
      case 'single-size':
        return this.#singleMean * Math.max(1, rows / this.#singleRows);
      case 'line':
        return this.#a + this.#b * rows;
    }
  }

  /**
   * Standard deviation in milliseconds of the run time of a batch of `rows` rows: the pooled
   * relative spread times the prediction, and never below the spread measured for that very size.
   * Deadline decisions add it up over a chain of batches as a variance, so the margin of `n`
   * batches grows like `√n`, not like `n`.
   */
  stdMs(rows: number): number | undefined {
    const mean = this.predict(rows);
    if (mean === undefined) return undefined;
    let sd = mean * this.#relStd;
    const s = this.#sizes.get(rows);
    if (s !== undefined && s.count >= 2) sd = Math.max(sd, Math.sqrt(s.variance));
    return sd;
  }

  /**
   * The largest standard deviation in milliseconds that {@link stdMs} gives any batch of 1 to
   * `rows` rows: one bound for decisions about batches of several sizes (`undefined` before any
   * data).
   *
   * @example
   * ```ts
   * const sd = model.maxStdMs(32); // no batch of up to 32 rows is expected to spread more
   * ```
   */
  maxStdMs(rows: number): number | undefined {
    const mean = this.predict(rows);
    if (mean === undefined) return undefined;
    // The pooled part grows with the prediction, which never falls with rows; the per-size part is
    // whatever a size up to `rows` measured.
    let sd = mean * this.#relStd;
    for (const s of this.#slots) if (s.rows <= rows && s.count >= 2) sd = Math.max(sd, Math.sqrt(s.variance));
    return sd;
  }

  /** How many standard deviations deadline decisions keep in reserve (the `k` option). */
  get k(): number {
    return this.#k;
  }

  /**
   * A conservative run time for deadline decisions: the prediction plus `k` pooled standard
   * deviations, and never below the running mean plus `k` deviations measured for that very size.
   */
  upper(rows: number): number | undefined {
    const mean = this.predict(rows);
    if (mean === undefined) return undefined;
    let u = mean * (1 + this.#k * this.#relStd);
    const s = this.#sizes.get(rows);
    if (s !== undefined && s.count >= 2) u = Math.max(u, s.mean + this.#k * Math.sqrt(s.variance));
    return u;
  }

  /**
   * An optimistic run time, for deciding that a request cannot be met at all: the prediction
   * minus `k` pooled standard deviations. With a single size seen it is `t(s)·rows/s` below `s`
   * and `t(s)` above it, which any model with a fixed cost and a cost per row respects.
   */
  lower(rows: number): number | undefined {
    this.#refit();
    if (this.#fit === 'none') return undefined;
    if (this.#fit === 'single-size') return this.#singleMean * Math.min(1, rows / this.#singleRows);
    return Math.max(0, (this.#a + this.#b * rows) * (1 - this.#k * this.#relStd));
  }

  /** How predictions are made now (see {@link LatencyModelState.fit}). */
  get fit(): LatencyModelState['fit'] {
    this.#refit();
    return this.#fit;
  }

  /** Largest row count seen so far (0 before any data). */
  get maxObservedRows(): number {
    let max = 0;
    for (const rows of this.#sizes.keys()) if (rows > max) max = rows;
    return max;
  }

  /** Cost per row in milliseconds, when two or more sizes have been seen. */
  get perRowMs(): number | undefined {
    this.#refit();
    return this.#fit === 'line' ? this.#b : undefined;
  }

  /** Fixed cost per batch in milliseconds, when two or more sizes have been seen. */
  get interceptMs(): number | undefined {
    this.#refit();
    return this.#fit === 'line' ? this.#a : undefined;
  }

  /** Everything learned so far (what `JSON.stringify(host.latencyModel)` prints). */
  toJSON(): LatencyModelState {
    this.#refit();
    const sizes = [...this.#sizes.entries()]
      .sort(([x], [y]) => x - y)
      .map(([rows, s]) => ({ rows, count: s.count, meanMs: s.mean, stdMs: Math.sqrt(s.variance) }));
    return {
      samples: this.#samples,
      fit: this.#fit,
      interceptMs: this.#fit === 'line' ? this.#a : undefined,
      perRowMs: this.#fit === 'line' ? this.#b : this.#fit === 'single-size' ? this.#singleMean / this.#singleRows : undefined,
      relativeStd: this.#relStd,
      sizes,
    };
  }

  /** Refits lazily: observing is on the hot path of every batch, predicting only at decisions. */
  #refit(): void {
    if (!this.#dirty) return;
    this.#dirty = false;
    const n = this.#sizes.size;
    if (n === 0) {
      this.#fit = 'none';
      return;
    }
    let sw = 0;
    let sx = 0;
    let sy = 0;
    let rel = 0;
    const slots = this.#slots;
    for (let i = 0; i < n; i++) {
      const s = slots[i] as Slot;
      const rows = s.rows;
      const w = Math.min(s.count, this.#maxWeight);
      sw += w;
      sx += w * rows;
      sy += w * s.mean;
      // A size seen once has no spread yet; counting it as 0 would make the model overconfident.
      if (s.count >= 2 && s.mean > 0) rel += w * (Math.sqrt(s.variance) / s.mean);
    }
    this.#relStd = rel / sw;
    if (n === 1) {
      const s = slots[0] as Slot;
      this.#fit = 'single-size';
      this.#singleRows = s.rows;
      this.#singleMean = s.mean;
      return;
    }
    const mx = sx / sw;
    const my = sy / sw;
    let sxx = 0;
    let sxy = 0;
    for (let i = 0; i < n; i++) {
      const s = slots[i] as Slot;
      const rows = s.rows;
      const w = Math.min(s.count, this.#maxWeight);
      sxx += w * (rows - mx) * (rows - mx);
      sxy += w * (rows - mx) * (s.mean - my);
    }
    let b = sxy / sxx;
    let a = my - b * mx;
    // Noise can tilt a fit of few sizes into nonsense; run time neither falls with rows nor is negative.
    if (!(b >= 0)) {
      b = 0;
      a = my;
    } else if (a < 0) {
      a = 0;
      let swx = 0;
      let swxx = 0;
      for (let i = 0; i < n; i++) {
        const s = slots[i] as Slot;
        const rows = s.rows;
        const w = Math.min(s.count, this.#maxWeight);
        swx += w * rows * s.mean;
        swxx += w * rows * rows;
      }
      b = swx / swxx;
    }
    this.#a = a;
    this.#b = b;
    this.#fit = 'line';
  }
}

/** Batches learned from before a size's first run time is clipped against the fit. */
const FIRST_SAMPLE_AFTER = 6;
/**
 * A size's first run time is taken at most this many times the fit's prediction: a 2–2.5× slow
 * spell passes (the fit follows it), a stall of the machine (live: 5–24× for tens of ms) does not.
 */
const FIRST_SAMPLE_RATIO = 3;
/** Samples of a size taken as they come before clipping starts (the spread needs a few to mean anything). */
const CLIP_AFTER = 4;
/** A sample further than this many standard deviations from the running mean is clipped to it. */
const CLIP_SIGMAS = 3;
/** The clip never gets narrower than this fraction of the mean (a size whose spread is still ~0). */
const MIN_REL_SPREAD = 0.05;

function positive(key: string, value: number, max: number, allowZero = false): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value > max || (allowZero ? value < 0 : value <= 0)) {
    throw new RangeError(`LatencyModel: expected \`${key}\` to be a number ${allowZero ? '>= 0' : '> 0'}${max === Infinity ? '' : ` and <= ${max}`}, got ${String(value)}`);
  }
  return value;
}
