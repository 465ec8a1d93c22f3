import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { describe } from '../core/describe';
import { stripUndefined } from '../core/options';
import { ModelLoadError } from './errors';
import { loadOrt } from './runtime';

/** A model: a file path, or its bytes (a `Uint8Array`/`Buffer`, any typed array view, or an `ArrayBuffer`). */
export type ModelSource = string | ArrayBufferView | ArrayBufferLike;

/**
 * Options of {@link loadSession}: onnxruntime's `SessionOptions` (passed through as they are),
 * with microbatch's defaults for the three that matter most.
 */
export interface LoadSessionOptions extends InferenceSession.SessionOptions {
  /**
   * Execution providers in order of preference, e.g. `['cuda', 'cpu']`. Only `cpu` (and `webgpu`)
   * ship with onnxruntime-node on Linux; CUDA needs its provider libraries installed.
   * @default ['cpu']
   */
  executionProviders?: InferenceSession.SessionOptions['executionProviders'];
  /**
   * Threads one `run()` may use inside an operator (the calling thread is one of them). With
   * several sessions or workers in the process, keep `intraOpNumThreads × sessions ≤ cores`, or
   * the thread pools fight over the same cores.
   *
   * Left unset, it is set to the CPUs this process may use. Whatever the count, the pool's
   * spin-waiting is off (`extra: { session: { intra_op: { allow_spinning: '0' } } }`) unless
   * `extra` sets it. Both keep onnxruntime's pool from competing with Node's main thread, which
   * calls `run()` and has the event loop's work to do between batches: onnxruntime pins its pool
   * threads to single CPUs when it picks the count itself, and its idle pool threads spin on a
   * core. With both, an inline model at saturation ran either at full speed or 2.5× slower for the
   * life of a process; with neither it never collapsed (docs/onnx.md, "Threads"). `0` means
   * onnxruntime's own choice, pinning included.
   * @default `os.availableParallelism()`, with spin-waiting off
   */
  intraOpNumThreads?: number;
  /**
   * Threads that run independent operators at the same time; only used with
   * `executionMode: 'parallel'`.
   * @default 0 (onnxruntime's choice)
   */
  interOpNumThreads?: number;
  /**
   * How much onnxruntime rewrites the graph at load time (fusions, constant folding). `'all'`
   * costs a little load time and is the fastest to run.
   * @default 'all'
   */
  graphOptimizationLevel?: InferenceSession.SessionOptions['graphOptimizationLevel'];
}

/** The defaults {@link loadSession} applies. */
export const SESSION_DEFAULTS: Readonly<Pick<LoadSessionOptions, 'executionProviders' | 'graphOptimizationLevel'>> = {
  executionProviders: ['cpu'],
  graphOptimizationLevel: 'all',
};

/**
 * Creates an onnxruntime `InferenceSession` from a model file or its bytes, with
 * {@link SESSION_DEFAULTS} under your options. Errors say what went wrong in microbatch's terms:
 * a `TypeError`/`RangeError` for bad arguments, a {@link ModelLoadError} (onnxruntime's error as
 * `cause`) for a missing file or bytes that are not a model.
 *
 * Bytes in a `SharedArrayBuffer` are copied first, since onnxruntime refuses shared memory.
 *
 * @param source - a path (relative paths resolve from the working directory) or the model bytes.
 * @param options - session options; see {@link LoadSessionOptions}.
 *
 * @example
 * ```ts
 * import { loadSession } from 'microbatch/onnx';
 * const session = await loadSession('model.onnx', { intraOpNumThreads: 2 });
 * console.log(session.inputNames);
 * await session.release();
 * ```
 */
export async function loadSession(source: ModelSource, options: LoadSessionOptions = {}): Promise<InferenceSession> {
  const where = 'loadSession';
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: expected options to be an object of session options, got ${describe(options)}`);
  }
  for (const key of ['intraOpNumThreads', 'interOpNumThreads'] as const) {
    const n = options[key];
    if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n) || n < 0)) {
      throw new RangeError(`${where}: expected \`${key}\` to be an integer >= 0 (0: onnxruntime's choice), got ${describe(n)}`);
    }
  }
  if (options.extra !== undefined && (typeof options.extra !== 'object' || options.extra === null || Array.isArray(options.extra))) {
    throw new TypeError(`${where}: expected \`extra\` to be an object of onnxruntime config entries, got ${describe(options.extra)}`);
  }
  const model = await toModelInput(where, source);
  const ort = loadOrt();
  try {
    return await ort.InferenceSession.create(model as Uint8Array, {
      ...SESSION_DEFAULTS,
      ...stripUndefined(options),
      intraOpNumThreads: options.intraOpNumThreads ?? availableParallelism(),
      extra: withSpinningDefault(options.extra),
    });
  } catch (e) {
    const what = typeof model === 'string' ? `the file ${JSON.stringify(model)}` : `${model.byteLength} bytes`;
    throw new ModelLoadError(`${where}: onnxruntime could not load a model from ${what}: ${(e as Error)?.message ?? String(e)}`, { cause: e });
  }
}

const SPIN_KEY = 'session.intra_op.allow_spinning';

/** `extra` that turns onnxruntime's intra-op spin-waiting on (the `'dedicated'` machine preset). @internal */
export const SPINNING: Readonly<Record<string, unknown>> = Object.freeze({ session: { intra_op: { allow_spinning: '1' } } });

/**
 * `extra` with onnxruntime's intra-op spin-waiting off, unless the caller set it (nested as
 * `{ session: { intra_op: { allow_spinning } } }` or flat as `'session.intra_op.allow_spinning'`;
 * onnxruntime-node accepts both). See {@link LoadSessionOptions.intraOpNumThreads}.
 */
function withSpinningDefault(extra: LoadSessionOptions['extra']): Record<string, unknown> {
  const given = (extra ?? {}) as Record<string, unknown> & { session?: Record<string, unknown> & { intra_op?: Record<string, unknown> } };
  if (given[SPIN_KEY] !== undefined || given.session?.intra_op?.allow_spinning !== undefined) return given;
  return { ...given, session: { ...given.session, intra_op: { ...given.session?.intra_op, allow_spinning: '0' } } };
}

/** Turns the accepted sources into what `InferenceSession.create` takes: an absolute path or a Uint8Array. */
async function toModelInput(where: string, source: ModelSource): Promise<string | Uint8Array> {
  if (typeof source === 'string') {
    if (source === '') throw new TypeError(`${where}: expected a model path or the model bytes, got an empty string`);
    const path = resolve(source);
    // onnxruntime's own message for a missing file is terse; check first to name the path we tried.
    const info = await stat(path).catch((e: NodeJS.ErrnoException) => {
      throw new ModelLoadError(
        `${where}: no model file at ${JSON.stringify(path)}${path === source ? '' : ` (from ${JSON.stringify(source)})`}: ${e.code ?? e.message}`,
        { cause: e },
      );
    });
    if (!info.isFile()) throw new ModelLoadError(`${where}: ${JSON.stringify(path)} is not a file`);
    return path;
  }
  let bytes: Uint8Array;
  if (ArrayBuffer.isView(source)) {
    // A view in this realm's Uint8Array: onnxruntime checks `instanceof Uint8Array`, which fails
    // for a Buffer or typed array made in another realm (a worker, a vm context).
    bytes = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  } else if (isArrayBufferLike(source)) {
    bytes = new Uint8Array(source);
  } else {
    throw new TypeError(`${where}: expected a model path (string) or the model bytes (Uint8Array, Buffer or ArrayBuffer), got ${describe(source)}`);
  }
  if (bytes.byteLength === 0) throw new ModelLoadError(`${where}: the model bytes are empty`);
  if (Object.prototype.toString.call(bytes.buffer) === '[object SharedArrayBuffer]') bytes = bytes.slice();
  return bytes;
}

function isArrayBufferLike(value: unknown): value is ArrayBufferLike {
  const tag = Object.prototype.toString.call(value);
  return tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]';
}
