/**
 * Helpers for the HTTP tests: a loopback client that never throws on a status, model files
 * generated into a temp folder, and a "gated" host whose batches wait until the test opens the
 * gate (to hold requests in flight, fill the queue, or make them time out).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type Agent, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelHost } from '../../src/engine/model-host';
import type { HostOptions } from '../../src/core/options';
import type { ServableModel } from '../../src/http';
import type { TensorLike } from '../../src/tensor/tensor-like';
import { int64Model, linearModel, mlpModel, multiIoModel } from '../support/onnx-models';

export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly text: string;
  json<T = any>(): T; // eslint-disable-line @typescript-eslint/no-explicit-any -- test convenience
}

export interface CallOptions {
  readonly body?: string | Buffer | unknown;
  readonly headers?: Record<string, string | number>;
  readonly agent?: Agent;
  /** Send the body in chunks without Content-Length (chunked transfer encoding). */
  readonly chunked?: boolean;
}

/** One HTTP request to 127.0.0.1:port; resolves with whatever status comes back. */
export function call(port: number, method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  let body: Buffer | undefined;
  const headers: Record<string, string | number> = { ...options.headers };
  if (options.body !== undefined) {
    if (Buffer.isBuffer(options.body)) body = options.body;
    else if (typeof options.body === 'string') body = Buffer.from(options.body);
    else {
      body = Buffer.from(JSON.stringify(options.body));
      headers['Content-Type'] ??= 'application/json';
    }
    if (options.chunked !== true) headers['Content-Length'] ??= body.length;
  }
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: options.agent ?? false, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: all, text: all.toString(), json: () => JSON.parse(all.toString()) });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 15 s`)));
    req.on('error', reject);
    if (body !== undefined && options.chunked === true) {
      // Several writes: the server sees a chunked body of unknown length.
      const step = Math.max(1, Math.ceil(body.length / 8));
      for (let i = 0; i < body.length; i += step) req.write(body.subarray(i, i + step));
      req.end();
    } else req.end(body);
  });
}

/** An inference request body for named float32 inputs given as rows. */
export function jsonInputs(inputs: Record<string, { shape: number[]; data: unknown[]; datatype?: string }>): unknown {
  return { inputs: Object.entries(inputs).map(([name, t]) => ({ name, shape: t.shape, datatype: t.datatype ?? 'FP32', data: t.data })) };
}

/** Generated model files in a temp folder, removed by `cleanup()`. */
export function modelFiles(): { dir: string; linear: string; multi: string; int64: string; mlp: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'mb-http-'));
  const files = { linear: join(dir, 'linear.onnx'), multi: join(dir, 'multi.onnx'), int64: join(dir, 'int64.onnx'), mlp: join(dir, 'mlp.onnx') };
  writeFileSync(files.linear, linearModel(4, 3));
  writeFileSync(files.multi, multiIoModel(3));
  writeFileSync(files.int64, int64Model());
  writeFileSync(files.mlp, mlpModel([64, 256, 256, 10]));
  return { dir, ...files, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A promise the test resolves by hand. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

type Feeds = Record<string, TensorLike>;

/**
 * A host that looks like the linear model to the server (`X [N, 2]` float32 → `Y [N, 2]`, Y = 2·X)
 * and whose batch function first awaits `hold.promise` (or throws `fail` when given).
 */
export function gatedHost(
  hold: { promise: Promise<void> },
  options: Partial<HostOptions<Feeds, Feeds>> & { fail?: Error } = {},
): ServableModel & ModelHost<Feeds, Feeds> {
  const { fail, ...hostOptions } = options;
  const host = new ModelHost<Feeds, Feeds>(
    async (items: readonly Feeds[]) => {
      await hold.promise;
      if (fail !== undefined) throw fail;
      return items.map((f) => {
        const x = f.X!;
        return { Y: { type: 'float32', data: Float32Array.from(x.data as Float32Array, (v) => v * 2), dims: x.dims } };
      });
    },
    { maxBatchSize: 8, name: 'gated', ...hostOptions },
  );
  const model = {
    inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 as const }],
    outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 2], batchAxis: 0 as const }],
  };
  Object.defineProperty(host, 'model', { value: model });
  return host as ServableModel & ModelHost<Feeds, Feeds>;
}

/** The JSON body for the gated host: one row [a, b]. */
export function gatedBody(a = 1, b = 2): unknown {
  return jsonInputs({ X: { shape: [1, 2], data: [a, b] } });
}

