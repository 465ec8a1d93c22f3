import type { Closable, MetricsSource } from '../http';
import type { ServingCore } from '../serving';
import type { Io } from './io';

/** `serve`'s flags that say where a core is served: the same whatever the core holds (a model file, a repository, a decoder). @internal */
export interface TransportFlags {
  readonly port: number;
  readonly host: string;
  /** `--grpc-port`: also serve the core over gRPC. */
  readonly grpcPort: number | undefined;
  /** Not `--no-dashboard`. */
  readonly dashboard: boolean;
  readonly corsOrigins: readonly string[];
  readonly metrics: { readonly registry: MetricsSource } | undefined;
}

/** A core on the wire: what shutdown closes (the servers), and the lines that say where it listens. */
export interface Listening {
  /** The HTTP server, and the gRPC one with `--grpc-port`: close them with the core. */
  readonly servers: readonly Closable[];
  /** Prints the listening lines (standard output: what scripts wait for), each with what to call there. */
  announce(io: Io, httpHint: string, grpcHint: string): void;
}

/**
 * Serves `core` over HTTP, and over gRPC with `--grpc-port`, on `--host`: one core, so calls of
 * both transports share its hosts' queues and batches. The gRPC server is made before either
 * listens, so that without @grpc/grpc-js the command fails before anything is served. @internal
 */
export async function listenOnTransports(core: ServingCore, flags: TransportFlags): Promise<Listening> {
  const { createInferenceServer } = await import('../http');
  const server = createInferenceServer({
    core,
    dashboard: flags.dashboard,
    ...(flags.metrics !== undefined ? { metrics: flags.metrics.registry } : {}),
    ...(flags.corsOrigins.length > 0 ? { corsOrigins: [...flags.corsOrigins] } : {}),
  });
  const grpc = flags.grpcPort === undefined ? undefined : (await import('../grpc')).createGrpcServer({ core });
  const address = await server.listen(flags.port, flags.host);
  const grpcAddress = await grpc?.listen(flags.grpcPort, flags.host);
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    servers: grpc === undefined ? [server] : [server, grpc],
    announce(io, httpHint, grpcHint) {
      io.out(`microbatch: listening on http://${shownHost}:${address.port} ${httpHint}\n`);
      if (grpcAddress !== undefined) io.out(`microbatch: listening for gRPC on ${shownHost}:${grpcAddress.port} ${grpcHint}\n`);
    },
  };
}
