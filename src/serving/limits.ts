import { channel } from 'node:diagnostics_channel';
import { SERVING_DEFAULTS } from '../core/defaults';
import { CHANNELS, type RequestEvent, type TransportEvent } from '../core/observer';
import { ServingError } from './errors';

/**
 * Limits that keep one client from hurting the others. Every one has a safe default. The host's
 * own `maxQueueSize` also applies (a full queue answers 503 with `Retry-After`).
 */
export interface ServerLimits {
  /**
   * Largest request body in bytes. A larger `Content-Length` is refused with 413 before the body
   * is read; a chunked body is cut off (413) as soon as it passes the limit.
   * @default 16777216 (16 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Most tensor elements in one request, summed over its inputs (400 past it), so that a small
   * body cannot declare a huge shape and a large one cannot pin the model.
   * @default 4194304 (2^22)
   */
  maxElements?: number;
  /**
   * Per-request time limit in milliseconds when the client names none; past it the answer is 504.
   * A client may ask for another with the `Timeout-Ms` header or `parameters.timeout_ms` in the body.
   * A host's own `timeoutMs` (its `options.timeoutMs`) holds unless the client or this asks for less.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * The longest time limit a client may ask for; larger requests are clamped to it.
   * @default 120000
   */
  maxTimeoutMs?: number;
  /**
   * The `Retry-After` seconds sent with 503 answers (queue full, shed, stopping).
   * @default 1
   */
  retryAfterSeconds?: number;
  /**
   * Most inference requests the server holds at once, from reading the body to the answer
   * (queued in the host or running included). One more is answered 503 `queue_full` with
   * `Retry-After` at once, before its body is read. This bounds memory and waiting even when the
   * host's own `maxQueueSize` is left unbounded (its default); `Infinity` turns it off.
   * @default 1024
   */
  maxConcurrentRequests?: number;
  /**
   * Time allowed to receive a whole request, headers and body (Node's `server.requestTimeout`):
   * a client that trickles bytes is cut off with 408.
   * @default 60000
   */
  requestTimeoutMs?: number;
}

/** The limits with their defaults filled in. @internal */
export type ResolvedLimits = Required<ServerLimits>;

/** The defaults of {@link ServerLimits}. */
export const DEFAULT_LIMITS: Readonly<Required<ServerLimits>> = {
  maxBodyBytes: 16 * 1024 * 1024,
  maxElements: 2 ** 22,
  // The same decision as the CLI's --timeout-ms: a server answers 504 rather than wait forever.
  timeoutMs: SERVING_DEFAULTS.timeoutMs,
  maxTimeoutMs: 120_000,
  retryAfterSeconds: 1,
  maxConcurrentRequests: 1024,
  requestTimeoutMs: 60_000,
};

/**
 * The limits with their defaults filled in, or the error naming a limit that is unknown or not a
 * positive number. @internal
 */
export function resolveLimits(where: string, limits: ServerLimits | undefined): ResolvedLimits {
  const out: Record<string, number> = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(limits ?? {})) {
    if (!(key in DEFAULT_LIMITS)) throw new TypeError(`${where}: unknown limit \`${key}\`; the limits are ${Object.keys(DEFAULT_LIMITS).join(', ')}`);
    if (value === undefined) continue;
    if (typeof value !== 'number' || !(value > 0)) throw new RangeError(`${where}: limit \`${key}\` must be a positive number, got ${String(value)}`);
    out[key] = value;
  }
  return out as unknown as ResolvedLimits;
}

/**
 * The time limit to pass with one request, or `undefined` to leave the servable's own
 * (`hostTimeoutMs`, its `options.timeoutMs`) in force: what the client asked for (any transport's
 * way of asking), else `timeoutMs`, clamped to `maxTimeoutMs`; a servable's own limit holds unless
 * that is shorter. A servable without a limit of its own (`undefined` or `Infinity`) gets it as is.
 * @internal
 */
export function requestTimeout(asked: number | undefined, limits: ResolvedLimits, hostTimeoutMs?: number): number | undefined {
  const wanted = Math.min(asked ?? limits.timeoutMs, limits.maxTimeoutMs);
  return hostTimeoutMs !== undefined && hostTimeoutMs <= wanted ? undefined : wanted;
}

/** A servable's own time limit (`options.timeoutMs`), if it has one. @internal */
export function ownTimeout(servable: { readonly options?: { readonly timeoutMs?: number } | undefined }): number | undefined {
  const t = servable.options?.timeoutMs;
  return typeof t === 'number' && t > 0 ? t : undefined;
}

const refusedChannel = channel(CHANNELS.refused);
const transportChannel = channel(CHANNELS.transport);

/**
 * Counts the requests a server holds at once (`maxConcurrentRequests`), over every model and
 * generator and every transport that shares it: one past the limit is refused before its body is
 * read, so that a flood costs neither memory nor parsing. Each refusal of a request for a named
 * host is published on `CHANNELS.refused`, so that metrics count it as the host's own refusals.
 * @internal
 */
export class RequestGate {
  readonly #max: number;
  #held = 0;

  constructor(maxConcurrentRequests: number) {
    this.#max = maxConcurrentRequests;
  }

  /**
   * Takes a place, or throws `'unavailable'` `queue_full` (retry later) when all are taken; give it
   * back with {@link leave}. `host`: the name of the host the request is for, whose metrics count
   * the refusal; with `transport`, an admitted call is published on `CHANNELS.transport`.
   */
  enter(host?: string, transport?: TransportEvent['transport']): void {
    if (this.#held >= this.#max) {
      if (host !== undefined && refusedChannel.hasSubscribers) {
        const event: RequestEvent = { host, outcome: 'queue-full', rows: 0, queueMs: 0, runMs: 0, totalMs: 0 };
        refusedChannel.publish(event);
      }
      throw new ServingError('unavailable', 'queue_full', `the server is already handling ${this.#max} inference requests (limits.maxConcurrentRequests); retry later`, { retry: true });
    }
    this.#held++;
    if (host !== undefined && transport !== undefined && transportChannel.hasSubscribers) {
      const event: TransportEvent = { host, transport };
      transportChannel.publish(event);
    }
  }

  /** Gives a place back. */
  leave(): void {
    this.#held--;
  }

  /** The places taken now. */
  get held(): number {
    return this.#held;
  }
}
