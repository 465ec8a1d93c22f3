/**
 * Type-level tests of the one host contract: every host and remote client is a `Servable`, and
 * each consumer's `ServableWith<...>` takes what it should. Checked by `tsc` (run before jest in
 * `npm test`); the runtime assertion only makes jest count the file.
 */
import { expectTypeOf } from 'expect-type';
import type { GenerationHost, ModelHost, Servable, ServableWith } from '../../src';
import type { InferenceServable } from '../../src/http';
import type { OnnxHost } from '../../src/onnx';
import type { RedisHostClient } from '../../src/remote/redis';
import type { SocketHostClient } from '../../src/remote/socket';

test('hosts and remote clients are Servables; each consumer asks for the members it reads', () => {
  expectTypeOf<ModelHost<number, number>>().toMatchTypeOf<ServableWith<'name' | 'inference' | 'stats' | 'options' | 'stop', number, number>>();
  expectTypeOf<GenerationHost<unknown>>().toMatchTypeOf<ServableWith<'name' | 'generate' | 'stats' | 'stop'>>();
  expectTypeOf<OnnxHost>().toMatchTypeOf<InferenceServable>();
  expectTypeOf<SocketHostClient<number, number>>().toMatchTypeOf<ServableWith<'inference' | 'stop', number, number>>();
  expectTypeOf<RedisHostClient<number, number>>().toMatchTypeOf<ServableWith<'name' | 'inference' | 'stats' | 'stop', number, number>>();
  // A test double with only what a consumer reads is one too.
  expectTypeOf({ inference: async (x: number) => x }).toMatchTypeOf<ServableWith<'inference', number, number>>();
  // @ts-expect-error the socket server needs inference()
  expectTypeOf({ name: 'x' }).toMatchTypeOf<ServableWith<'inference'>>();
  expectTypeOf<Servable>().toHaveProperty('name');
});
