/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/support/ort-environment.js',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // Type checking is done once by `tsc` in `npm test` (faster than per-file checks here).
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true }],
  },
  setupFiles: ['reflect-metadata'],
  testTimeout: 20000,
};
