/**
 * The suite `npm test` and CI gate on: behaviour only. Tests that measure time or CPU shares live in
 * test/perf/ and run with `npm run test:perf` (jest.perf.config.js), never in this gate: a busy
 * 2-core machine must not turn a good change red.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: '<rootDir>/test/support/ort-environment.js',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/perf/'],
  transform: {
    // tsconfig's isolatedModules makes ts-jest transpile only; `npm test` type-checks once with tsc.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  globalSetup: '<rootDir>/scripts/build-if-stale.js',
  reporters: ['default', '<rootDir>/test/support/progress-reporter.js'],
  setupFiles: ['reflect-metadata'],
  testTimeout: 20000,
};
