/**
 * Scale-out across machines on Redis Streams (`microbatch/redis`): model replicas pull from a
 * shared request stream only what they can start now, so batching stays work-conserving across the
 * cluster; front ends send requests and read their answers. Needs the `redis` package (node-redis),
 * an optional peer dependency. See docs/scale-out.md. The verbs are the socket transport's
 * (`microbatch/socket`): `serveHost` on each replica, `connectHost` on each front end.
 * @packageDocumentation
 * @module microbatch/redis
 */
import { connectRedisHost as connectToRedis } from './connect-redis-host';
import type { ConnectRedisHostOptions as FrontEndOptions } from './front-end-types';
import type { ServeHostOnRedisOptions as ReplicaOptions } from './replica-types';
import { serveHostOnRedis as serveOnRedis } from './serve-on-redis';

export { serveHostOnRedis as serveHost } from './serve-on-redis';
export type { RedisReplica, RedisReplicaStats, RedisServable, RedisTakeover, ServeHostOnRedisOptions as ServeHostOptions } from './replica-types';
export { connectRedisHost as connectHost, RedisHostClient } from './connect-redis-host';
export type { ConnectRedisHostOptions as ConnectHostOptions, PublishedModel, PublishedTensor, RedisHostClientStats } from './front-end-types';
export type { RedisOptions } from './common';
export { DeliveryLimitError } from '../../core/errors';
export { HostUnavailableError } from '../wire/errors';

/**
 * The older name of `serveHost` (`microbatch/redis`).
 * @deprecated Use `serveHost` from `microbatch/redis`: every transport's subpath names its pair `serveHost`/`connectHost`.
 *
 * @example
 * ```ts
 * const replica = await serveHostOnRedis(host, { url, model: 'classifier' }); // now: serveHost(host, { url, model })
 * ```
 */
export const serveHostOnRedis: typeof serveOnRedis = serveOnRedis;

/**
 * The older name of `connectHost` (`microbatch/redis`).
 * @deprecated Use `connectHost` from `microbatch/redis`: every transport's subpath names its pair `serveHost`/`connectHost`.
 *
 * @example
 * ```ts
 * const model = await connectRedisHost({ url, model: 'classifier' }); // now: connectHost({ url, model })
 * ```
 */
export const connectRedisHost: typeof connectToRedis = connectToRedis;

/** @deprecated Use `ServeHostOptions` from `microbatch/redis`. */
export type ServeHostOnRedisOptions = ReplicaOptions;

/** @deprecated Use `ConnectHostOptions` from `microbatch/redis`. */
export type ConnectRedisHostOptions = FrontEndOptions;
