/**
 * The deprecated names that are types, or root aliases of a subpath's values: each is the new
 * name's type (checked by `tsc`), or the same function (checked by jest).
 */
import { expectTypeOf } from 'expect-type';
import * as root from '../../src';
import type { Batched, Batching } from '../../src/api/generated-inference';
import type { GenerationProxy, GenerationProxyOptions, GenerativeProxy, GenerativeProxyOptions } from '../../src/api/generative-proxy';
import * as socket from '../../src/remote/socket';
import type { ConnectHostOptions, ConnectRedisHostOptions, ServeHostOnRedisOptions, ServeHostOptions } from '../../src/remote/redis';

test('deprecated type names are the new types', () => {
  class Model {
    async predictBatch(xs: readonly string[]): Promise<number[]> {
      return xs.map((x) => x.length);
    }
  }
  expectTypeOf<Batched<Model>>().toEqualTypeOf<Batching<Model>>();
  expectTypeOf<GenerativeProxy<number>>().toEqualTypeOf<GenerationProxy<number>>();
  expectTypeOf<GenerativeProxyOptions<number>>().toEqualTypeOf<GenerationProxyOptions<number>>();
  expectTypeOf<ServeHostOnRedisOptions>().toEqualTypeOf<ServeHostOptions>();
  expectTypeOf<ConnectRedisHostOptions>().toEqualTypeOf<ConnectHostOptions>();
});

test("the root's serveHost and connectHost (deprecated: microbatch/socket) are the socket transport's", () => {
  expect(root.serveHost).toBe(socket.serveHost);
  expect(root.connectHost).toBe(socket.connectHost);
});
