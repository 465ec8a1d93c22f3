// @grpc/grpc-js and @grpc/proto-loader are optional peers: importing microbatch/grpc must not load
// them (the CLI imports it whether or not --grpc-port is given), and serving without them must
// say which package to install.
import type * as GrpcEntry from '../../src/grpc';
import { gate, gatedHost } from '../http/helpers';

function missing(name: string): never {
  const e = new Error(`Cannot find module '${name}' from 'src/grpc/proto.ts'`) as Error & { code: string };
  e.code = 'MODULE_NOT_FOUND';
  throw e;
}

afterEach(() => {
  jest.dontMock('@grpc/grpc-js');
  jest.dontMock('@grpc/proto-loader');
  jest.resetModules();
});

test('importing microbatch/grpc loads neither peer; createGrpcServer without @grpc/grpc-js names the package', () => {
  let loaded = false;
  jest.doMock('@grpc/grpc-js', () => {
    loaded = true;
    return missing('@grpc/grpc-js');
  });
  const entry = jest.requireActual<typeof GrpcEntry>('../../src/grpc');
  expect(loaded).toBe(false);
  expect(() => entry.createGrpcServer({ models: { gated: gatedHost(gate()) }, stopModelsOnClose: false })).toThrow(
    'microbatch/grpc needs the @grpc/grpc-js package, which is not installed. Install it next to microbatch: npm install @grpc/grpc-js',
  );
  expect(loaded).toBe(true);
});

test('without @grpc/proto-loader: the message names that package', () => {
  jest.doMock('@grpc/proto-loader', () => missing('@grpc/proto-loader'));
  const entry = jest.requireActual<typeof GrpcEntry>('../../src/grpc');
  expect(() => entry.createGrpcServer({ models: { gated: gatedHost(gate()) }, stopModelsOnClose: false })).toThrow(
    'microbatch/grpc needs the @grpc/proto-loader package, which is not installed. Install it next to microbatch: npm install @grpc/proto-loader',
  );
});
