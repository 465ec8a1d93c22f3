// The setup the Redis tests with child replicas share: one redis-server for the file, a raw
// client to look at the keys, a fresh model name and front end per test, and the child replicas a
// test started stopped after it.
import { createClient } from 'redis';
import { connectHost, type RedisHostClient } from '../../../src/remote/redis';
import { startReplica, type ChildReplica } from '../../support/child-replica';
import { startRedis, type RedisServer } from '../../support/redis-server';

export interface RedisFixture<In, Out> {
  readonly redis: RedisServer;
  readonly raw: ReturnType<typeof createClient>;
  /** This test's model name. */
  readonly model: string;
  readonly front: RedisHostClient<In, Out>;
  /** Starts a child replica of this test's model, stopped after the test. */
  replica(name: string, extra?: { claimIdleMs?: number; maxDeliveries?: number }): Promise<ChildReplica>;
}

/** Registers the hooks (call it inside `describe`); the fields are valid inside tests. */
export function useRedisFixture<In, Out>(prefix: string): RedisFixture<In, Out> {
  let redis: RedisServer | undefined;
  let raw: ReturnType<typeof createClient> | undefined;
  let front: RedisHostClient<In, Out> | undefined;
  let n = 0;
  const replicas: ChildReplica[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    raw = createClient({ url: redis.url });
    await raw.connect();
  });
  afterAll(async () => {
    await raw?.close();
    await redis?.stop();
  });
  beforeEach(async () => {
    n++;
    front = await connectHost<In, Out>({ url: redis!.url, model: `${prefix}${n}` });
  });
  afterEach(async () => {
    await front?.close();
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
  });
  return {
    get redis() {
      return redis!;
    },
    get raw() {
      return raw!;
    },
    get model() {
      return `${prefix}${n}`;
    },
    get front() {
      return front!;
    },
    async replica(name, extra = {}) {
      const r = await startReplica({ url: redis!.url, model: `${prefix}${n}`, name, ...extra });
      replicas.push(r);
      return r;
    },
  };
}
