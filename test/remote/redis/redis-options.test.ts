// Misuse of microbatch/redis: every bad option is refused before anything connects, with a message
// that says what was expected and what came; credentials never appear in an error.
import { ModelHost } from '../../../src';
import { connectHost, connectRedisHost, serveHost, serveHostOnRedis } from '../../../src/remote/redis';
import { redactUrl } from '../../../src/remote/redis/connection';
import { decodeRequest, encodeRequest } from '../../../src/remote/redis/entry';

const host = new ModelHost(async (xs: readonly number[]) => xs, { maxBatchSize: 4 });
afterAll(() => host.stop());
const url = 'redis://127.0.0.1:1';

test('serveHostOnRedis and connectRedisHost (deprecated: serveHost, connectHost) are the same functions', () => {
  expect(serveHostOnRedis).toBe(serveHost);
  expect(connectRedisHost).toBe(connectHost);
});

test.each([
  [{ url: 'http://x', model: 'm' }, new TypeError('connectRedisHost: expected `url` to be a redis:// or rediss:// URL (credentials and TLS go in the URL), got "http://x"')],
  [{ url: 42, model: 'm' }, new TypeError('connectRedisHost: expected `url` to be a redis:// or rediss:// URL (credentials and TLS go in the URL), got number')],
  [{ url, model: 'a b' }, new TypeError('connectRedisHost: expected `model` to be 1 to 200 characters of letters, digits and . _ : -, got "a b" (string)')],
  [{ url, model: '{x}' }, new TypeError('connectRedisHost: expected `model` to be 1 to 200 characters of letters, digits and . _ : -, got "{x}" (string)')],
  [{ url, model: 'm', group: '' }, new TypeError('connectRedisHost: expected `group` to be 1 to 64 letters, digits, _ or -, got "" (string)')],
  [{ url, model: 'm', timeoutMs: 0 }, new RangeError('connectRedisHost: expected `timeoutMs` to be a number of milliseconds > 0 (or Infinity), got 0 (number)')],
  [{ url, model: 'm', claimIdleMs: Infinity }, new RangeError('connectRedisHost: expected `claimIdleMs` to be a finite number of milliseconds, got Infinity (number)')],
  [{ url, model: 'm', maxEntryBytes: 1.5 }, new RangeError('connectRedisHost: expected `maxEntryBytes` to be an integer number of bytes from 1 and up, got 1.5 (number)')],
  [{ url, model: 'm', tensor: 'Tensor' }, new TypeError('connectRedisHost: expected `tensor` to be a function (type, data, dims) => tensor, got "Tensor" (string)')],
  [{ url, model: 'm', timeout: 5 }, new TypeError('connectRedisHost: unknown option `timeout`; the known options are `url`, `model`, `group`, `claimIdleMs`, `connectTimeoutMs`, `maxEntryBytes`, `tensor`, `timeoutMs`')],
])('connectRedisHost(%p) is refused', async (options, error) => {
  await expect(connectHost(options as never)).rejects.toThrow(error);
  await expect(connectHost(options as never)).rejects.toBeInstanceOf(error.constructor);
});

test.each([
  [{ url, model: 'm', maxDeliveries: 0 }, new RangeError('serveHostOnRedis: expected `maxDeliveries` to be an integer from 1 and up, got 0 (number)')],
  [{ url, model: 'm', consumer: 'a/b' }, new TypeError('serveHostOnRedis: expected `consumer` to be 1 to 64 letters, digits, _ or -, got "a/b" (string)')],
  [{ url, model: 'm', blockMs: -1 }, new RangeError('serveHostOnRedis: expected `blockMs` to be a number of milliseconds > 0 (or Infinity), got -1 (number)')],
  [{ url, model: 'm', claim: 1 }, new TypeError('serveHostOnRedis: unknown option `claim`; the known options are `url`, `model`, `group`, `claimIdleMs`, `connectTimeoutMs`, `maxEntryBytes`, `tensor`, `consumer`, `maxDeliveries`, `blockMs`, `replyTtlMs`, `heartbeatTtlMs`, `onTakeover`')],
  [{ url, model: 'm', heartbeatTtlMs: 0 }, new RangeError('serveHostOnRedis: expected `heartbeatTtlMs` to be a number of milliseconds > 0 (or Infinity), got 0 (number)')],
  [{ url, model: 'm', heartbeatTtlMs: Infinity }, new RangeError('serveHostOnRedis: expected `heartbeatTtlMs` to be a finite number of milliseconds, got Infinity (number)')],
  [{ url, model: 'm', onTakeover: 'log' }, new TypeError('serveHostOnRedis: expected `onTakeover` to be a function (takeover) => void, got "log" (string)')],
])('serveHostOnRedis(host, %p) is refused', async (options, error) => {
  await expect(serveHost(host, options as never)).rejects.toThrow(error);
});

test('serveHostOnRedis needs a host with inference(), stats and options', async () => {
  await expect(serveHost({ inference: async () => 1 } as never, { url, model: 'm' })).rejects.toThrow(
    new TypeError('serveHostOnRedis: expected a host with inference(), stats and options, such as a ModelHost; got object'),
  );
  await expect(serveHost(null as never, { url, model: 'm' })).rejects.toThrow(/got null$/);
});

test('a Redis that cannot be reached rejects after connectTimeoutMs, naming the URL without its password', async () => {
  const error = (await connectHost({ url: 'redis://app:s3cret@127.0.0.1:1', model: 'm', connectTimeoutMs: 200 }).catch((e: unknown) => e)) as Error;
  expect(error.message).toMatch(/^connectRedisHost: could not connect to redis:\/\/app:\*\*\*@127\.0\.0\.1:1: no connection within 200 ms/);
  expect(error.message).not.toContain('s3cret');
  expect(String(error.stack)).not.toContain('s3cret');
});

test('redactUrl masks passwords, and usernames used alone as tokens', () => {
  expect(redactUrl('rediss://user:pw@h:6380/2')).toBe('rediss://user:***@h:6380/2');
  expect(redactUrl('redis://token@h:6379')).toBe('redis://***@h:6379');
  expect(redactUrl('redis://h:6379')).toBe('redis://h:6379');
  expect(redactUrl('not a url')).toBe('(an unparsable Redis URL)');
});

describe('entries: what a replica accepts', () => {
  const revive = (_c: string, type: string, data: unknown, dims: readonly number[]): unknown => ({ type, data, dims });
  const fields = (extra: Record<string, string | Buffer>): Buffer[] => Object.entries(extra).flatMap(([k, v]) => [Buffer.from(k), Buffer.from(v)]);
  const good = (): Record<string, string | Buffer> => {
    const f = encodeRequest({ frontEnd: 'fe_1', requestId: '7', timeoutMs: 50, priority: 2 }, { x: new Float32Array([1, 2]) });
    const out: Record<string, string | Buffer> = {};
    for (let i = 0; i < f.length; i += 2) out[String(f[i])] = f[i + 1]!;
    return out;
  };

  test('a good entry round-trips, typed arrays included', () => {
    const d = decodeRequest(fields(good()), 1024, revive);
    expect(d).toMatchObject({ ok: true, frontEnd: 'fe_1', requestId: '7', timeoutMs: 50, priority: 2 });
    expect((d as { item: { x: Float32Array } }).item.x).toEqual(new Float32Array([1, 2]));
  });

  test.each([
    [{ v: '2' }, 'an entry of wire version "2"; this replica reads version 1', true],
    [{ f: '../../x' }, 'an entry without a valid front-end id and request id', false],
    [{ r: 'abc' }, 'an entry without a valid front-end id and request id', false],
    [{ t: '-5' }, 'an entry with an invalid time limit "-5"', true],
    [{ p: 'NaN' }, 'an entry with an invalid priority "NaN"', true],
    [{ m: Buffer.from([1, 2]) }, 'an entry whose payload does not decode (a truncated payload)', true],
  ])('%p is described, never thrown', (change, problem, replyable) => {
    const d = decodeRequest(fields({ ...good(), ...change }), 1024, revive);
    expect(d).toEqual({ ok: false, problem, frontEnd: replyable ? 'fe_1' : undefined, requestId: replyable ? '7' : undefined });
  });

  test('an oversized payload is refused before it is decoded', () => {
    const d = decodeRequest(fields(good()), 10, revive);
    expect(d).toMatchObject({ ok: false, problem: expect.stringMatching(/^an entry of \d+ bytes, over maxEntryBytes \(10\)$/) });
  });
});
