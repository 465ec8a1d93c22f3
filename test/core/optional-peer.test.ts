// The optional peers (onnxruntime-node, prom-client, @opentelemetry/api): a subpath imported
// without its package names the package to install; any other failure passes through untouched.
import { requireOptionalPeer } from '../../src/core/optional-peer';

function notFound(name: string): Error {
  const e = new Error(`Cannot find module '${name}'\nRequire stack:\n- /app/index.js`) as Error & { code: string };
  e.code = 'MODULE_NOT_FOUND';
  return e;
}

describe('requireOptionalPeer', () => {
  test('returns what the loader returns', () => {
    const mod = { ok: true };
    expect(requireOptionalPeer('x-peer', 'microbatch/x', () => mod)).toBe(mod);
  });

  test('a missing peer becomes an error naming the package and the subpath, with the original as cause', () => {
    const original = notFound('x-peer');
    let caught: unknown;
    try {
      requireOptionalPeer('x-peer', 'microbatch/x', () => {
        throw original;
      });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(Error);
    expect((caught as Error).message).toBe('microbatch/x needs the x-peer package, which is not installed. Install it next to microbatch: npm install x-peer');
    expect((caught as Error).cause).toBe(original);
  });

  test('a module missing inside the peer, or any other failure, is rethrown as it is', () => {
    const inner = notFound('x-peer-core');
    expect(() =>
      requireOptionalPeer('x-peer', 'microbatch/x', () => {
        throw inner;
      }),
    ).toThrow(inner);
    // A scoped package whose name starts like the peer's is another module.
    expect(() =>
      requireOptionalPeer('x', 'microbatch/x', () => {
        throw notFound('x-other');
      }),
    ).toThrow("Cannot find module 'x-other'");
    const native = new Error('libonnxruntime.so: cannot open shared object file');
    expect(() =>
      requireOptionalPeer('x-peer', 'microbatch/x', () => {
        throw native;
      }),
    ).toThrow(native);
  });
});

describe.each([
  ['prom-client', '../../src/observe/prometheus', 'microbatch/prometheus'],
  ['@opentelemetry/api', '../../src/observe/otel', 'microbatch/otel'],
])('%s missing', (pkg, modulePath, subpath) => {
  afterEach(() => {
    jest.dontMock(pkg);
    jest.resetModules();
  });

  test(`importing ${subpath} says which package to install`, () => {
    jest.doMock(pkg, () => {
      throw notFound(pkg);
    });
    expect(() => jest.requireActual(modulePath)).toThrow(`${subpath} needs the ${pkg} package, which is not installed. Install it next to microbatch: npm install ${pkg}`);
  });
});

test('the core package loads none of the optional peers', () => {
  jest.isolateModules(() => {
    const loaded: string[] = [];
    for (const pkg of ['onnxruntime-node', 'prom-client', '@opentelemetry/api']) {
      jest.doMock(pkg, () => {
        loaded.push(pkg);
        return {};
      });
    }
    jest.requireActual('../../src');
    expect(loaded).toEqual([]);
  });
  for (const pkg of ['onnxruntime-node', 'prom-client', '@opentelemetry/api']) jest.dontMock(pkg);
});
