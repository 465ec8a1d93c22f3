import type * as Grpc from '@grpc/grpc-js';

/**
 * HTTP/2 receive windows and the largest frame the server accepts. A raw tensor request is often
 * larger than HTTP/2's default 64 KiB windows (the PaddleOCR classifier's is 110 KiB), so with the
 * defaults a client sends a message in 16 KiB frames and stops twice per message for a
 * WINDOW_UPDATE, and the server's main thread handles every frame and update. Measured on the
 * classifier with 64 calls in flight: the server's main thread spent 0.26 instead of 0.30 ms per
 * call with these (docs/performance.md, section 11). A window only bounds what a client may send
 * before the server reads it, and grpc-js reads eagerly; the message size limit
 * (`limits.maxBodyBytes`) still refuses a larger message.
 * @internal
 */
export const HTTP2_TUNING = {
  /** Per stream (SETTINGS_INITIAL_WINDOW_SIZE). */
  streamWindow: 1 << 20,
  /** Per connection, raised with a WINDOW_UPDATE when the session starts. */
  connectionWindow: 16 << 20,
  /** SETTINGS_MAX_FRAME_SIZE (HTTP/2 allows 16 KiB to 16 MiB). */
  maxFrameSize: 1 << 20,
} as const;

/** What grpc-js (1.10–1.14) keeps privately and this module reaches for; absent fields are left alone. */
interface GrpcServerInternals {
  commonServerOptions?: { settings?: Record<string, unknown> };
  http2Servers?: Map<{ on(event: 'session', listener: (session: { setLocalWindowSize(size: number): void }) => void): unknown }, unknown>;
}

/**
 * Raises the HTTP/2 windows and frame size of a grpc-js server before it binds. grpc-js has no
 * server option for them (its `grpc-node.flow_control_window` is a client option): it creates its
 * http2 servers from a private options object, which this sets, and each new session's connection
 * window is raised once bound (`onBound`). Where a grpc-js version keeps neither, nothing changes
 * but speed; test/grpc/flow-control.test.ts checks that the installed version takes them.
 * @internal
 */
export function raiseFlowControl(server: Grpc.Server): { onBound(): void } {
  const internals = server as unknown as GrpcServerInternals;
  const options = internals.commonServerOptions;
  if (typeof options === 'object' && options !== null) {
    options.settings = { ...options.settings, initialWindowSize: HTTP2_TUNING.streamWindow, maxFrameSize: HTTP2_TUNING.maxFrameSize };
  }
  const tuned = new WeakSet<object>();
  return {
    onBound() {
      const servers = internals.http2Servers;
      if (!(servers instanceof Map)) return;
      for (const http2Server of servers.keys()) {
        if (tuned.has(http2Server)) continue;
        tuned.add(http2Server);
        http2Server.on('session', (session) => {
          try {
            session.setLocalWindowSize(HTTP2_TUNING.connectionWindow);
          } catch {
            // A session closing as it opens: nothing to tune.
          }
        });
      }
    },
  };
}
