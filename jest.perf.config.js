/**
 * Tests that assert timings, CPU shares or quality thresholds of the policies (`npm run test:perf`).
 * They print the numbers behind each assertion. Run them on a quiet machine: neither `npm test` nor
 * CI gates on them, because a loaded machine can fail them without anything being wrong.
 * @type {import('jest').Config}
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  roots: ['<rootDir>/test/perf'],
  testPathIgnorePatterns: ['/node_modules/'],
  // One file at a time: the measurements must not compete with each other for the two cores.
  maxWorkers: 1,
  testTimeout: 120000,
};
