import { createClient } from 'redis';
import { AbortError, DeadlineExceededError, DeliveryLimitError, HostStoppedError, ModelHost } from '../../../src';
import { connectHost, serveHost, type RedisHostClient } from '../../../src/remote/redis';
import { describeWithRedis, startRedis, type RedisServer } from '../../support/redis-server';
import { ControlledModel, settle } from '../../support/controlled-model';
import { waitFor } from '../../support/wait-for';

let redis: RedisServer;
let model = 0;
/** A fresh model name per test: tests share one server, never its keys. */
const nextModel = (): string => `m${++model}`;


describeWithRedis('microbatch/redis with a real redis-server', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  test('results equal a local host; requests from two front ends share batches on one replica', async () => {
    const name = nextModel();
    const sizes: number[] = [];
    const host = new ModelHost(
      async (xs: readonly Float32Array[]) => {
        sizes.push(xs.length);
        return xs.map((x) => x.map((v) => v * 2));
      },
      { maxBatchSize: 16 },
    );
    const replica = await serveHost(host, { url: redis.url, model: name });
    const a = await connectHost<Float32Array, Float32Array>({ url: redis.url, model: name });
    const b = await connectHost<Float32Array, Float32Array>({ url: redis.url, model: name });
    try {
      const inputs = Array.from({ length: 24 }, (_, i) => Float32Array.from([i, -i]));
      const results = await Promise.all(inputs.map((x, i) => (i % 2 === 0 ? a : b).inference(x)));
      results.forEach((y, i) => expect(Array.from(y)).toEqual([2 * i, -2 * i]));
      expect(results[0]).toBeInstanceOf(Float32Array);
      expect(sizes.reduce((s, n) => s + n, 0)).toBe(24);
      expect(Math.max(...sizes)).toBeGreaterThan(1); // batched, across both front ends
      // The replica counts an answer when Redis confirms it, just after the caller may have heard it.
      await waitFor(() => replica.stats.answered === 24, 10_000, 'all answers confirmed');
      expect(replica.stats).toMatchObject({ pulled: 24, answered: 24, inFlight: 0, refused: 0 });
      expect(a.stats).toMatchObject({ sent: 12, answered: 12, inFlight: 0, duplicatesDropped: 0 });
      // A front end's reply stream expires by itself (replyTtlMs after its last answer): one that dies leaves nothing.
      const raw = createClient({ url: redis.url });
      await raw.connect();
      const ttl = Number(await raw.sendCommand(['PTTL', `mb:{${name}}:rep:${a.id}`]));
      await raw.close();
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      await a.close();
      await b.close();
      await replica.close();
      await host.stop();
    }
  });

  test('requests sent before any replica exists wait in Redis and are served when one starts', async () => {
    const name = nextModel();
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    const answers = Promise.all([1, 2, 3].map((x) => front.inference(x)));
    await waitFor(() => front.stats.sent === 3, 10_000, 'three requests sent');
    expect(front.ready).toBe(false);
    const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => x + 100), { maxBatchSize: 8 });
    const replica = await serveHost(host, { url: redis.url, model: name });
    await expect(answers).resolves.toEqual([101, 102, 103]);
    await waitFor(() => front.ready, 10_000, 'the front end sees the replica');
    await front.close();
    await replica.close();
    await host.stop();
  });

  test('per-item errors keep their class; a throwing batch rejects its callers; the replica keeps serving', async () => {
    const name = nextModel();
    const host = new ModelHost(
      async (xs: readonly number[]) => {
        if (xs.includes(13)) throw new RangeError('thirteen is unlucky');
        return xs.map((x) => (x < 0 ? new TypeError(`negative: ${x}`) : x));
      },
      { maxBatchSize: 8 },
    );
    const replica = await serveHost(host, { url: redis.url, model: name });
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    try {
      const [ok, bad] = await Promise.allSettled([front.inference(1), front.inference(-1)]);
      expect(ok).toEqual({ status: 'fulfilled', value: 1 });
      expect((bad as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
      expect((bad as PromiseRejectedResult).reason.message).toBe('negative: -1');
      const thrown = (await front.inference(13).catch((e: unknown) => e)) as Error;
      expect(thrown).toBeInstanceOf(RangeError);
      expect(thrown.message).toBe('thirteen is unlucky');
      await expect(front.inference(2)).resolves.toBe(2);
    } finally {
      await front.close();
      await replica.close();
      await host.stop();
    }
  });

  test('a busy replica pulls ahead only the next batch: what it cannot start next waits in Redis', async () => {
    const name = nextModel();
    const m = new ControlledModel<number, number>();
    const host = new ModelHost(m.fn, { maxBatchSize: 4 });
    const replica = await serveHost(host, { url: redis.url, model: name, blockMs: 50 });
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    try {
      const first = front.inference(1);
      await waitFor(() => m.calls.length === 1, 10_000, 'the first batch runs');
      const later = [2, 3, 4, 5, 6].map((x) => front.inference(x));
      await waitFor(() => front.stats.sent === 6, 10_000, 'all sent');
      await waitFor(() => replica.stats.pulled === 5, 10_000, 'the next batch pulled ahead');
      // Several read rounds pass: the replica must not take more than it starts next.
      await new Promise((r) => setTimeout(r, 300));
      expect(replica.stats.pulled).toBe(5);
      expect(host.stats.queued).toBe(4);
      expect(replica.stats.inFlight).toBe(5);
      m.answer(0, (x) => x * 10);
      await expect(first).resolves.toBe(10);
      await waitFor(() => m.calls.length === 2, 10_000, 'the next batch runs');
      expect(m.calls[1]!.items).toEqual([2, 3, 4, 5]); // the batch pulled ahead, full
      m.answer(1, (x) => x * 10);
      await waitFor(() => m.calls.length === 3, 10_000, 'the rest runs');
      m.answer(2, (x) => x * 10);
      await expect(Promise.all(later)).resolves.toEqual([20, 30, 40, 50, 60]);
    } finally {
      await front.close();
      await replica.close();
      await host.stop();
    }
  });

  test('an idle replica is handed new work before a busy one pulls it ahead', async () => {
    const name = nextModel();
    const busyModel = new ControlledModel<number, number>();
    const idleModel = new ControlledModel<number, number>();
    const busyHost = new ModelHost(busyModel.fn, { maxBatchSize: 4 });
    const idleHost = new ModelHost(idleModel.fn, { maxBatchSize: 4 });
    // Long blocks: neither replica re-reads on a timer during the test, so the idle one is always
    // waiting in its read when a request arrives.
    const busy = await serveHost(busyHost, { url: redis.url, model: name, consumer: 'busy', blockMs: 30_000 });
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    let idle: Awaited<ReturnType<typeof serveHost>> | undefined;
    try {
      const first = front.inference(1);
      await waitFor(() => busyModel.calls.length === 1, 10_000, 'the busy replica runs the first batch');
      idle = await serveHost(idleHost, { url: redis.url, model: name, consumer: 'idle', blockMs: 30_000 });
      await new Promise((r) => setTimeout(r, 200)); // its read is waiting
      const second = front.inference(2);
      await waitFor(() => idleModel.calls.length === 1, 10_000, 'the idle replica runs the second request');
      expect(idleModel.calls[0]!.items).toEqual([2]);
      expect(busy.stats.pulled).toBe(1);
      busyModel.answer(0, (x) => x * 10);
      idleModel.answer(0, (x) => x * 10);
      await expect(Promise.all([first, second])).resolves.toEqual([10, 20]);
    } finally {
      await front.close();
      await busy.close({ graceMs: 0 });
      await idle?.close({ graceMs: 0 });
      await busyHost.stop();
      await idleHost.stop();
    }
  });

  test('timeoutMs and abort answer the caller at once and take the entry back; a replica never runs an expired entry', async () => {
    const name = nextModel();
    const front = await connectHost<number, number>({ url: redis.url, model: name, timeoutMs: 100 });
    const ac = new AbortController();
    const timedOut = front.inference(1).catch((e: unknown) => e) as Promise<Error>;
    const aborted = front.inference(2, { signal: ac.signal }).catch((e: unknown) => e) as Promise<Error>;
    const expires = front.inference(3, { timeoutMs: 150 }).catch((e: unknown) => e as Error);
    ac.abort(new Error('client left'));
    const t = await timedOut;
    expect(t).toBeInstanceOf(DeadlineExceededError);
    expect(t.message).toMatch(/^connectRedisHost\(m\d+\): timed out after \d+ ms \(timeoutMs 100\) waiting for a replica; its answer will be discarded$/);
    const a = await aborted;
    expect(a).toBeInstanceOf(AbortError);
    expect(a.cause).toEqual(new Error('client left'));
    expect(await expires).toBeInstanceOf(DeadlineExceededError);
    // Entries of callers that gave up are deleted; a replica that starts now runs none of them.
    const ran: number[] = [];
    const host = new ModelHost(async (xs: readonly number[]) => (ran.push(...xs), xs), { maxBatchSize: 8 });
    const replica = await serveHost(host, { url: redis.url, model: name });
    await expect(front.inference(4)).resolves.toBe(4);
    expect(ran).toEqual([4]);
    await front.close();
    await replica.close();
    await host.stop();
  });

  test('a replica skips an entry whose deadline passed by the Redis server clock, even if never deleted and even when its own clock is wrong', async () => {
    const name = nextModel();
    const raw = createClient({ url: redis.url });
    await raw.connect();
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    try {
      // An entry added with a 1 ms limit, whose front end never deleted it (it died, say).
      const { encodeRequest } = await import('../../../src/remote/redis/entry');
      await raw.sendCommand(['XADD', `mb:{${name}}:req`, '*', ...encodeRequest({ frontEnd: front.id, requestId: '999', timeoutMs: 1, priority: undefined }, 7)]);
      await new Promise((r) => setTimeout(r, 20));
      // The replica's own clock is an hour slow: by it, the entry would still have time to run.
      const realNow = Date.now.bind(Date);
      jest.spyOn(Date, 'now').mockImplementation(() => realNow() - 3_600_000);
      const ran: number[] = [];
      const host = new ModelHost(async (xs: readonly number[]) => (ran.push(...xs), xs), { maxBatchSize: 8 });
      const replica = await serveHost(host, { url: redis.url, model: name });
      await expect(front.inference(5)).resolves.toBe(5);
      await waitFor(() => replica.stats.expired === 1, 10_000, 'the expired entry is skipped');
      expect(ran).toEqual([5]);
      expect(await raw.sendCommand(['XLEN', `mb:{${name}}:req`])).toBe(0);
      await replica.close();
      await host.stop();
    } finally {
      jest.restoreAllMocks();
      await front.close();
      await raw.close();
    }
  });

  test('close(): waits for requests in flight, then refuses new ones with HostStoppedError', async () => {
    const name = nextModel();
    const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 8 });
    const replica = await serveHost(host, { url: redis.url, model: name });
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    const inFlight = front.inference(9);
    const closed = front.close();
    await expect(inFlight).resolves.toBe(9);
    await closed;
    await expect(front.inference(1)).rejects.toThrow(new HostStoppedError(`connectRedisHost(${name}): the client is closed`));
    await replica.close();
    await replica.close(); // idempotent
    expect(host.stats.batches).toBe(1); // the replica did not stop the host
    await host.stop();
  });

  test('an undecodable entry is answered with an error when it names its front end, dropped and counted when not', async () => {
    const name = nextModel();
    const raw = createClient({ url: redis.url });
    await raw.connect();
    const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 8 });
    const replica = await serveHost(host, { url: redis.url, model: name });
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    try {
      const stream = `mb:{${name}}:req`;
      await raw.sendCommand(['XADD', stream, '*', 'hello', 'world']);
      await raw.sendCommand(['XADD', stream, '*', 'v', '1', 'f', front.id, 'r', '777', 't', '', 'p', '', 'm', 'garbage']);
      await waitFor(() => replica.stats.undecodable === 2, 10_000, 'both bad entries are read');
      await expect(front.inference(3)).resolves.toBe(3); // the replica goes on
      // The entry with a reply address, and the good one (counted when Redis confirms, just after the caller hears).
      await waitFor(() => replica.stats.answered === 2, 10_000, 'both answers confirmed');
      await waitFor(() => front.stats.duplicatesDropped === 1, 10_000, 'the error answer reaches the front end, which has no caller for it');
      expect(replica.stats.refused).toBe(0);
      expect(await raw.sendCommand(['XLEN', stream])).toBe(0);
    } finally {
      await front.close();
      await replica.close();
      await host.stop();
      await raw.close();
    }
  });

  test('an entry already delivered maxDeliveries times is answered with DeliveryLimitError, not run', async () => {
    const name = nextModel();
    const raw = createClient({ url: redis.url });
    await raw.connect();
    const front = await connectHost<number, number>({ url: redis.url, model: name });
    const stream = `mb:{${name}}:req`;
    try {
      const answer = front.inference(66);
      await waitFor(() => front.stats.sent === 1, 10_000, 'sent');
      await new Promise((r) => setTimeout(r, 10));
      // Two replicas that died holding it: read it, and read it again after it was claimed.
      await raw.sendCommand(['XREADGROUP', 'GROUP', 'replicas', 'dead-1', 'COUNT', '1', 'STREAMS', stream, '>']);
      await new Promise((r) => setTimeout(r, 30));
      await raw.sendCommand(['XAUTOCLAIM', stream, 'replicas', 'dead-2', '20', '0-0']);
      await new Promise((r) => setTimeout(r, 30));
      const ran: number[] = [];
      const host = new ModelHost(async (xs: readonly number[]) => (ran.push(...xs), xs), { maxBatchSize: 8 });
      const replica = await serveHost(host, { url: redis.url, model: name, claimIdleMs: 20, maxDeliveries: 2 });
      const error = (await answer.catch((e: unknown) => e)) as DeliveryLimitError;
      expect(error).toBeInstanceOf(DeliveryLimitError);
      expect(error.deliveries).toBe(2);
      expect(error.message).toMatch(/^microbatch\/redis: request \d+-\d+ was delivered 2 times and crashed or stalled a replica each time; it is not run again \(maxDeliveries 2\)$/);
      expect(ran).toEqual([]);
      expect(replica.stats).toMatchObject({ poisoned: 1, reclaimed: 1 });
      await replica.close();
      await host.stop();
    } finally {
      await front.close();
      await raw.close();
    }
  });

  test('lost Redis: callers in flight get HostUnavailableError at once, calls during the outage are refused at once, and both sides recover when it returns empty', async () => {
    const name = nextModel();
    const m = new ControlledModel<number, number>();
    const host = new ModelHost(m.fn, { maxBatchSize: 8 });
    const replica = await serveHost(host, { url: redis.url, model: name, blockMs: 100 });
    const front: RedisHostClient<number, number> = await connectHost<number, number>({ url: redis.url, model: name, timeoutMs: 60_000 });
    try {
      const inFlight = front.inference(1).catch((e: unknown) => e) as Promise<Error>;
      await waitFor(() => m.calls.length === 1, 10_000, 'the batch runs');
      const killedAt = Date.now();
      await redis.kill();
      const lost = await inFlight;
      expect(lost.name).toBe('HostUnavailableError');
      expect(lost.message).toMatch(/lost its connection to Redis while the request was in flight; it may or may not have run/);
      expect(Date.now() - killedAt).toBeLessThan(30_000); // at once, not at its 60 s timeout
      const refused = (await front.inference(2).catch((e: unknown) => e)) as Error;
      expect(refused.name).toBe('HostUnavailableError');
      expect(refused.message).toMatch(/cannot reach Redis/);
      expect(refused.message).not.toMatch(/127\.0\.0\.1:\d+@|password/);
      m.answer(0, (x) => x); // the replica's answer has nowhere to go: dropped, the replica survives
      await redis.restart();
      await waitFor(() => front.ready, 20_000, 'the front end sees the replica again');
      const next = front.inference(3);
      await waitFor(() => m.calls.length === 2, 10_000, 'the new request runs');
      m.answer(1, (x) => x * 2);
      await expect(next).resolves.toBe(6);
    } finally {
      await front.close();
      await replica.close({ graceMs: 0 });
      await host.stop();
      await settle();
    }
  }, 60_000);

  test('AUTH through the URL works; a wrong password fails with the password masked', async () => {
    const secured = await startRedis(['--requirepass', 'pa55word']);
    try {
      const url = `redis://default:pa55word@127.0.0.1:${secured.port}`;
      const host = new ModelHost(async (xs: readonly number[]) => xs.map((x) => -x), { maxBatchSize: 4 });
      const replica = await serveHost(host, { url, model: 'auth' });
      const front = await connectHost<number, number>({ url, model: 'auth' });
      await expect(front.inference(5)).resolves.toBe(-5);
      await front.close();
      await replica.close();
      await host.stop();
      const wrong = (await connectHost({ url: `redis://default:wrong-pa55@127.0.0.1:${secured.port}`, model: 'auth', connectTimeoutMs: 30_000 }).catch((e: unknown) => e)) as Error;
      expect(wrong.message).toMatch(/^connectRedisHost: could not connect to redis:\/\/default:\*\*\*@127\.0\.0\.1:\d+: WRONGPASS/); // at once, not after connectTimeoutMs
      expect(`${wrong.message} ${String(wrong.stack)}`).not.toContain('wrong-pa55');
    } finally {
      await secured.stop();
    }
  });
});
