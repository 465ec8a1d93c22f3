import {
  generatorMetadata,
  logLevelOf,
  modelConfig,
  modelMetadata,
  ownTimeout,
  requestTimeout,
  servedVersion,
  serverMetadata,
  shuttingDown,
  type ModelStatistics,
  type ServingCore,
} from '../serving';
import { decodeInferRequest, encodeInferResponse } from './infer-codec';
import type { ModelInferRequest, ModelInferResponse, ModelRequest } from './messages';
import { toGrpcFailure, type GrpcFailure } from './status';

/** A request's version: proto3 sends an empty string for none. @internal */
export function versionOf(version: string | undefined): string | undefined {
  return version === undefined || version === '' ? undefined : version;
}

/** The milliseconds left before a call's deadline, or `undefined` for a call without one. @internal */
export function msLeft(deadline: Date | number): number | undefined {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(at) ? Math.max(1, at - Date.now()) : undefined;
}

/** The shorter of two optional time limits. */
function shorter(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/**
 * What each RPC answers, over one serving core: the protocol without the transport (the server
 * wires these to grpc-js calls, the stream handler reuses `infer`). Every lookup goes through
 * `core.model` / `core.generator` / `core.modelReady`.
 * @internal
 */
export class GrpcCalls {
  readonly core: ServingCore;
  /** True once the gRPC server closes (its calls are refused even while a shared core still serves HTTP). */
  closing = false;

  constructor(core: ServingCore) {
    this.core = core;
  }

  serverReady(): { ready: boolean } {
    return { ready: this.core.ready && !this.closing };
  }

  modelReady(req: ModelRequest): { ready: boolean } {
    return { ready: this.core.modelReady(req.name ?? '', versionOf(req.version)) && !this.closing };
  }

  serverMetadata(): ReturnType<typeof serverMetadata> {
    return serverMetadata();
  }

  /** The protocol's model metadata; `properties` carries microbatch's `max_batch_size` (the REST answer's field). */
  modelMetadata(req: ModelRequest): ReturnType<typeof modelMetadata> & { properties: Record<string, string> } {
    const name = req.name ?? '';
    const version = versionOf(req.version);
    const meta = this.core.registry.kindOf(name) === 'generator' ? generatorMetadata(name, servedVersion(this.core.generator(name, version).host), null) : modelMetadata(name, this.core.model(name, version));
    return { ...meta, properties: meta.max_batch_size === null ? {} : { max_batch_size: String(meta.max_batch_size) } };
  }

  modelConfig(req: ModelRequest): { config: ReturnType<typeof modelConfig> } {
    const name = req.name ?? '';
    return { config: modelConfig(name, this.core.model(name, versionOf(req.version))) };
  }

  /** One model's statistics, or (no name) every loaded batching model's. */
  modelStatistics(req: ModelRequest): { model_stats: ModelStatistics[] } {
    const name = req.name ?? '';
    const names = name === '' ? this.core.registry.names().filter((n) => this.core.registry.kindOf(n) === 'model' && this.core.registry.servedVersion(n) !== undefined) : [name];
    const version = name === '' ? undefined : versionOf(req.version);
    return {
      model_stats: names.map((n) => {
        const host = this.core.model(n, version);
        return this.core.stats.stats(n, servedVersion(host), host);
      }),
    };
  }

  /**
   * `ModelInfer`: admits the call (`core.enter`), checks the request against the model, queues it
   * on the model's host (batched with every transport's concurrent requests) and encodes the
   * answer. `deadlineMs`: the client's gRPC deadline, the request's time limit within the server's
   * limits; `signal`: aborted when the client cancels, which takes the request out of the queue.
   */
  async infer(msg: ModelInferRequest, deadlineMs: number | undefined, signal: AbortSignal): Promise<ModelInferResponse> {
    if (this.closing) throw shuttingDown();
    const name = msg.model_name ?? '';
    const host = this.core.model(name, versionOf(msg.model_version));
    this.core.enter(host.name, 'grpc');
    try {
      const { request, raw } = decodeInferRequest(msg, name, host, this.core.limits.maxElements);
      const timeoutMs = requestTimeout(shorter(request.timeoutMs, deadlineMs), this.core.limits, ownTimeout(host));
      const results = await host.inference(request.feeds, timeoutMs === undefined ? { signal } : { timeoutMs, signal });
      // The version serving when the answer is written (as over REST, around a reload).
      return encodeInferResponse(name, servedVersion(host), request, results, raw);
    } finally {
      this.core.leave();
    }
  }

  /** Maps a failure to its gRPC status and logs it as REST logs its answers, under `microbatch grpc`. */
  fail(rpc: string, model: string, error: unknown): GrpcFailure {
    const f = toGrpcFailure(error);
    const where = model === '' ? rpc : `${rpc} ${JSON.stringify(model)}`;
    this.core.logger.failure(logLevelOf(f.servingCode), 'microbatch grpc', f.statusName, f.reason, `microbatch grpc: ${where} → ${f.statusName} ${f.reason}: ${f.details}`, { rpc, model });
    return f;
  }
}
