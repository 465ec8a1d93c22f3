/** How much the server logs: each level includes the ones after it; `'silent'` logs nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Severity order: a line is written when its level is at or above the configured one. */
const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** The log levels, for validating a level given as text (`--log-level`). */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/**
 * How the server logs. Lines go to `write` (standard error by default); refused and failed
 * requests (5xx answers) are summarised: the first of a kind (status and code) is written at once
 * with its message, the rest are counted and written as one line per window, e.g.
 * `503 queue_full ×812 in the last 5 s`. Client mistakes (4xx) are logged one line each at
 * `'debug'`.
 *
 * @example
 * ```ts
 * createInferenceServer({ models, log: { level: 'warn', format: 'json' } });
 * ```
 */
export interface LogOptions {
  /**
   * The least severe level written. `'error'`: load failures and 500s; `'warn'`: also refusals
   * (503, 504); `'info'`: also lifecycle; `'debug'`: also every 4xx.
   * @default 'info'
   */
  level?: LogLevel;
  /**
   * `'text'`: `LEVEL message`; `'json'`: one JSON object per line with `time`, `level`, `msg` and
   * the event's fields (`status`, `code`, `count`...), for log collectors.
   * @default 'text'
   */
  format?: 'text' | 'json';
  /**
   * Receives each finished line (without a newline).
   * @default a line on process.stderr
   */
  write?: (line: string) => void;
  /**
   * How long repeated refusals of one kind are counted before their summary line is written.
   * @default 5000
   */
  summaryWindowMs?: number;
  /**
   * The clock for timestamps and summary windows, in milliseconds (tests inject one).
   * @default Date.now
   */
  now?: () => number;
}

/**
 * The server's `log` option: {@link LogOptions}, or a function that receives every line as text
 * at level `'info'` (the simple form).
 * @example `log: (line) => console.error(line)`
 */
export type LogOption = LogOptions | ((line: string) => void);

/** Extra structured fields of a log line. @internal */
export type LogFields = Readonly<Record<string, string | number | boolean>>;

interface Tally {
  count: number;
  readonly level: 'error' | 'warn';
  readonly source: string;
  readonly status: number | string;
  readonly code: string;
}

/** The level an HTTP status is logged at: a client's mistake (4xx) at debug, a model's failure (500) at error, a refusal at warn. */
function levelOfStatus(status: number): FailureLevel {
  return status < 500 ? 'debug' : status === 500 ? 'error' : 'warn';
}

/** How much a failed answer matters: `'debug'` for a client's mistake (one line each), `'warn'` for a refusal and `'error'` for a failure (both counted per window). */
export type FailureLevel = 'debug' | 'warn' | 'error';

/**
 * Writes leveled, optionally JSON lines, and folds repeated 5xx answers into one summary line per
 * window, so that an overload writes a few lines instead of one per refused request.
 * @internal
 */
export class ServerLogger {
  readonly #min: number;
  readonly #json: boolean;
  readonly #write: (line: string) => void;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #tallies = new Map<string, Tally>();
  #windowStart = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  /**
   * A logger that writes nothing when `option` is undefined.
   * @param where - what a bad option's error message starts with. @default 'createInferenceServer'
   */
  constructor(option: LogOption | undefined, where = 'createInferenceServer') {
    const o: LogOptions = typeof option === 'function' ? { write: option } : (option ?? { level: 'silent' });
    const level = o.level ?? 'info';
    if (!(level in RANK)) throw new TypeError(`${where}: log.level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
    const format = o.format ?? 'text';
    if (format !== 'text' && format !== 'json') throw new TypeError(`${where}: log.format must be 'text' or 'json', got ${JSON.stringify(format)}`);
    const windowMs = o.summaryWindowMs ?? 5_000;
    if (!(windowMs > 0)) throw new RangeError(`${where}: log.summaryWindowMs must be a positive number, got ${String(windowMs)}`);
    this.#min = RANK[level];
    this.#json = format === 'json';
    this.#write = o.write ?? ((line) => process.stderr.write(`${line}\n`));
    this.#windowMs = windowMs;
    this.#now = o.now ?? Date.now;
  }

  /** Whether a line at `level` would be written. */
  enabled(level: LogLevel): boolean {
    return RANK[level] >= this.#min && level !== 'silent';
  }

  /** Writes one line at `level`. */
  line(level: Exclude<LogLevel, 'silent'>, message: string, fields: LogFields = {}): void {
    if (!this.enabled(level)) return;
    if (this.#json) this.#write(JSON.stringify({ time: new Date(this.#now()).toISOString(), level, msg: message, ...fields }));
    else this.#write(`${level.toUpperCase()} ${message}`);
  }

  /**
   * Logs a failed HTTP answer: a 4xx one line at debug; a 5xx the first time of its kind in a
   * window (at error for 500s, warn for refusals), then counted for the window's summary.
   */
  answer(status: number, code: string, message: string, fields: LogFields): void {
    this.failure(levelOfStatus(status), 'microbatch http', status, code, message, fields);
  }

  /**
   * Logs a failed answer of any transport: at `'debug'` one line each; at `'warn'` or `'error'` the
   * first of its kind (source, status and code) in a window, then counted for the window's summary
   * (`microbatch grpc: UNAVAILABLE queue_full ×812 in the last 5 s`).
   * @param source - what the summary line starts with, e.g. `'microbatch grpc'`.
   * @param status - the transport's own status (an HTTP number, a gRPC status name).
   */
  failure(level: FailureLevel, source: string, status: number | string, code: string, message: string, fields: LogFields): void {
    if (level === 'debug') return this.line('debug', message, { status, code, ...fields });
    if (!this.enabled(level)) return;
    const key = `${source} ${status} ${code}`;
    const tally = this.#tallies.get(key);
    if (tally !== undefined) {
      tally.count++;
      return;
    }
    if (this.#tallies.size === 0) this.#windowStart = this.#now();
    this.#tallies.set(key, { count: 0, level, source, status, code });
    this.line(level, message, { status, code, ...fields });
    this.#timer ??= setInterval(() => this.flush(), this.#windowMs);
    this.#timer.unref();
  }

  /**
   * Writes one summary line per kind counted since the window began (`503 queue_full ×812 in the
   * last 5 s`) and starts a new window. A kind that stays quiet for a whole window is forgotten
   * (its next occurrence is written in full again); the timer stops when none is left.
   */
  flush(): void {
    const now = this.#now();
    const seconds = Math.max(0, now - this.#windowStart) / 1000;
    const shown = seconds >= 10 ? seconds.toFixed(0) : seconds.toFixed(1).replace(/\.0$/, '');
    for (const [key, t] of this.#tallies) {
      if (t.count === 0) {
        this.#tallies.delete(key);
        continue;
      }
      this.line(t.level, `${t.source}: ${t.status} ${t.code} ×${t.count} in the last ${shown} s`, { status: t.status, code: t.code, count: t.count, window_s: Number(shown) });
      t.count = 0;
    }
    this.#windowStart = now;
    if (this.#tallies.size === 0) this.#stop();
  }

  /** Writes what is counted and stops the window timer (the server is closing). */
  close(): void {
    this.flush();
    this.#tallies.clear();
    this.#stop();
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
