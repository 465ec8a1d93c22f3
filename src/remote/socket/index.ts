/**
 * Several processes, one model: serve a host on a Unix socket (or Windows named pipe) and connect
 * to it from other processes; their requests are batched together.
 * @packageDocumentation
 */
export { serveHost } from './serve-host';
export type { InferenceTarget, ServeHostOptions, SocketHostServer } from './serve-host';
export { connectHost, SocketHostClient } from './connect-host';
export type { ConnectHostOptions } from './connect-host';
export { HostUnavailableError } from '../wire/errors';
