import { getHeapSpaceStatistics } from 'node:v8';
import { heapBallastMb, holdHeapBallast } from '../../src/cli/heap-ballast';

// The ballast `microbatch serve` holds (src/cli/heap-ballast.ts): memory in V8's old generation,
// as large objects, that grows to what was asked and is never given back while the process runs.

/** Bytes in V8's large-object spaces (old and young): where each ballast chunk lives. */
function largeObjectBytes(): number {
  return getHeapSpaceStatistics()
    .filter((s) => s.space_name.includes('large_object'))
    .reduce((sum, s) => sum + s.space_used_size, 0);
}

test('0 holds nothing; a size holds at least that many MiB as large objects; a smaller size later adds nothing; a larger one adds the difference', () => {
  holdHeapBallast(0);
  expect(heapBallastMb()).toBe(0);
  const before = largeObjectBytes();
  holdHeapBallast(4);
  expect(heapBallastMb()).toBe(4);
  expect(largeObjectBytes() - before).toBeGreaterThanOrEqual(4 * 1024 * 1024);
  holdHeapBallast(2);
  expect(heapBallastMb()).toBe(4);
  holdHeapBallast(6.2);
  // Whole 512 KiB chunks, rounded up.
  expect(heapBallastMb()).toBe(6.5);
  expect(largeObjectBytes() - before).toBeGreaterThanOrEqual(6.5 * 1024 * 1024);
});
