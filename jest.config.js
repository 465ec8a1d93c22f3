/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/support/ort-environment.js',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // tsconfig's isolatedModules makes ts-jest transpile only; `npm test` type-checks once with tsc.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  setupFiles: ['reflect-metadata'],
  testTimeout: 20000,
};
