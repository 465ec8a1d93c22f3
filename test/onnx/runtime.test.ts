// onnxruntime-node is an optional peer dependency: importing microbatch/onnx must not load it, and
// using it without the package must say which package to install.
import type * as OnnxHelpers from '../../src/onnx';
import type * as Runtime from '../../src/onnx/runtime';

function missing(name: string): never {
  const e = new Error(`Cannot find module '${name}' from 'src/onnx/runtime.ts'`) as Error & { code: string };
  e.code = 'MODULE_NOT_FOUND';
  throw e;
}

afterEach(() => {
  jest.dontMock('onnxruntime-node');
  jest.resetModules();
});

test('importing the helpers does not load onnxruntime-node; using them without it names the package', async () => {
  let loaded = false;
  jest.doMock('onnxruntime-node', () => {
    loaded = true;
    return missing('onnxruntime-node');
  });
  const onnx = jest.requireActual<typeof OnnxHelpers>('../../src/onnx');
  expect(loaded).toBe(false);
  await expect(onnx.loadSession(new Uint8Array([1, 2, 3]))).rejects.toThrow(
    'microbatch/onnx needs the onnxruntime-node package, which is not installed. Install it next to microbatch: npm install onnxruntime-node',
  );
  expect(loaded).toBe(true);
});

test("another module missing inside onnxruntime-node is rethrown as it is", () => {
  jest.doMock('onnxruntime-node', () => missing('onnxruntime-common'));
  const { loadOrt } = jest.requireActual<typeof Runtime>('../../src/onnx/runtime');
  expect(() => loadOrt()).toThrow("Cannot find module 'onnxruntime-common'");
});
