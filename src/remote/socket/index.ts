/**
 * Several processes, one model: serve a host on a Unix socket (or Windows named pipe) and connect
 * to it from other processes; their requests are batched together (`microbatch/socket`). The
 * verbs are the Redis transport's (`microbatch/redis`): `serveHost` where the model runs,
 * `connectHost` where requests come from.
 * @packageDocumentation
 * @module microbatch/socket
 */
export { serveHost } from './serve-host';
export type { InferenceTarget, ServeHostOptions, SocketHostServer } from './serve-host';
export { connectHost, SocketHostClient } from './connect-host';
export type { ConnectHostOptions } from './connect-host';
export { HostUnavailableError } from '../wire/errors';
