import { readdirSync, readFileSync } from 'node:fs';
import { Tensor } from 'onnxruntime-node';
import { loadSession } from '../../src/onnx';
import { mlpModel } from '../support/onnx-models';

// What the spin-waiting default buys, measured in CPU ticks of onnxruntime's pool threads. A CPU
// share: on a loaded machine it can drift, so it lives here and not in `npm test`, which checks the
// option that reaches onnxruntime instead (test/onnx/load-session.test.ts).

/** CPU time (clock ticks) of each thread of this process, by thread id. */
function threadTicks(): Map<string, number> {
  const out = new Map<string, number>();
  for (const task of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(task, Number(fields[11]) + Number(fields[12]));
    } catch {
      // the thread exited while we looked
    }
  }
  return out;
}

/**
 * CPU ticks that the threads a session created spend while runs are separated by short idle
 * gaps: a spin-waiting pool thread burns its core through the gaps, a sleeping one does not.
 */
async function poolTicksAcrossGaps(options: Parameters<typeof loadSession>[1]): Promise<number> {
  const before = threadTicks();
  const session = await loadSession(mlpModel([64, 256, 256, 10]), { intraOpNumThreads: 2, ...options });
  const x = new Tensor('float32', new Float32Array(64 * 64).fill(0.5), [64, 64]);
  const start = threadTicks();
  for (let i = 0; i < 100; i++) {
    await session.run({ [session.inputNames[0] as string]: x });
    await new Promise((r) => setTimeout(r, 2));
  }
  const end = threadTicks();
  await session.release();
  let ticks = 0;
  for (const [id, t] of end) if (!before.has(id)) ticks += t - (start.get(id) ?? 0);
  return ticks;
}

test("onnxruntime's pool threads do not spin between runs unless extra asks for it, in either form", async () => {
  const quiet = await poolTicksAcrossGaps({});
  const spinning = await poolTicksAcrossGaps({ extra: { session: { intra_op: { allow_spinning: '1' } } } });
  // Measured here: 0 ticks without spinning, ~25 (250 ms of CPU in ~0.3 s) with it.
  console.log(`pool-thread CPU ticks across 100 idle gaps: ${quiet} without spinning, ${spinning} with it`);
  expect(quiet).toBeLessThanOrEqual(3);
  expect(spinning).toBeGreaterThan(quiet + 5);
  expect(await poolTicksAcrossGaps({ extra: { 'session.intra_op.allow_spinning': '1' } })).toBeGreaterThan(quiet + 5);
  // Other extra entries leave the default alone.
  expect(await poolTicksAcrossGaps({ extra: { session: { use_env_allocators: '0' } } })).toBeLessThanOrEqual(3);
});

