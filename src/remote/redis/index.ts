/**
 * Scale-out across machines on Redis Streams (`microbatch/redis`): model replicas pull from a
 * shared request stream only what they can start now, so batching stays work-conserving across the
 * cluster; front ends send requests and read their answers. Needs the `redis` package (node-redis),
 * an optional peer dependency. See docs/scale-out.md.
 * @packageDocumentation
 * @module microbatch/redis
 */
export { serveHostOnRedis } from './serve-on-redis';
export type { RedisReplica, RedisReplicaStats, RedisServable, ServeHostOnRedisOptions } from './replica-types';
export { connectRedisHost, RedisHostClient } from './connect-redis-host';
export type { ConnectRedisHostOptions, PublishedModel, PublishedTensor, RedisHostClientStats } from './front-end-types';
export type { RedisOptions } from './common';
export { DeliveryLimitError } from '../../core/errors';
export { HostUnavailableError } from '../wire/errors';
