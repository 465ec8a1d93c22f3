// `microbatch serve model.onnx --redis URL`: the command line as a replica, end to end.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { connectHost } from '../../../src/remote/redis';
import { linearModel, linearReference } from '../../support/onnx-models';
import { describeWithRedis, startRedis, type RedisServer } from '../../support/redis-server';
import { waitFor } from '../../support/wait-for';

const BIN = join(__dirname, '../../../bin/microbatch.js');
let redis: RedisServer;
let dir: string;

function cli(args: readonly string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, MICROBATCH_CLI_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

describeWithRedis('microbatch serve --redis', () => {
  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'mb-cli-redis-'));
    writeFileSync(join(dir, 'lin.onnx'), linearModel(4, 3));
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('runs a replica that front ends reach through Redis, and leaves the group on SIGTERM', async () => {
    const run = cli(['serve', join(dir, 'lin.onnx'), '--port', '0', '--workers', '0', '--redis', redis.url, '--claim-idle-ms', '2000', '--log-level', 'warn']);
    const killer = setTimeout(() => run.child.kill('SIGKILL'), 40_000);
    try {
      await waitFor(
        () => {
          if (run.child.exitCode !== null) throw new Error(`serve exited: ${run.output().stderr}`);
          return /replica \S+ of "lin".*\)\n/.test(run.output().stderr);
        },
        30_000,
        'the replica line',
      );
      expect(run.output().stderr).toMatch(/^microbatch: replica \S+ of "lin" on redis:\/\/127\.0\.0\.1:\d+: front ends reach it with connectRedisHost\(\{ url, model: "lin" \}\)$/m);
      const front = await connectHost<{ X: { type: string; data: Float32Array; dims: number[] } }, { Y: { data: Float32Array } }>({ url: redis.url, model: 'lin', timeoutMs: 10_000 });
      const x = Float32Array.from([1, 2, 3, 4]);
      const y = await front.inference({ X: { type: 'float32', data: x, dims: [1, 4] } });
      linearReference(x).forEach((v, j) => expect(y.Y.data[j]).toBeCloseTo(v, 5));
      await front.close();
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(run.output().stderr).toMatch(/drained, exiting/);
      const raw = createClient({ url: redis.url });
      await raw.connect();
      expect(await raw.sendCommand(['ZCARD', 'mb:{lin}:replicas'])).toBe(0); // it left: front ends stop counting it
      expect(await raw.sendCommand(['XINFO', 'CONSUMERS', 'mb:{lin}:req', 'replicas'])).toEqual([]);
      await raw.close();
    } finally {
      clearTimeout(killer);
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  }, 60_000);

  test.each([
    [['--redis', 'http://x'], 'microbatch serve: --redis must be a redis:// or rediss:// URL'],
    [['--claim-idle-ms', '100'], 'microbatch serve: --claim-idle-ms needs --redis'],
  ])('%p is a usage error (exit 2)', async (flags, message) => {
    const run = cli(['serve', join(dir, 'lin.onnx'), ...flags]);
    expect(await run.exited).toBe(2);
    expect(run.output().stderr).toContain(message);
  });
});
