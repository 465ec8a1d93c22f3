import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelRepository } from '../../src/repository';
import { ServingRegistry, type InferenceServable } from '../../src/serving';
import { linearReference } from '../support/onnx-models';
import { waitFor } from '../support/wait-for';
import { row, tempRepository, TEST_DEFAULTS } from './helpers';

type Repo = ReturnType<typeof tempRepository>;
let repo: Repo;
let registry: ServingRegistry;
const opened: ModelRepository[] = [];
let lines: string[];

beforeEach(() => {
  repo = tempRepository();
  registry = new ServingRegistry('test');
  lines = [];
});
afterEach(async () => {
  for (const r of opened.splice(0)) await r.close();
  await Promise.all((await registry.settled()).map((s) => s.host.stop()));
  repo.cleanup();
});

function open(options: Partial<ConstructorParameters<typeof ModelRepository>[2]> = {}): ModelRepository {
  const r = new ModelRepository(repo.dir, registry, { defaults: TEST_DEFAULTS, retireAfterMs: 20, log: (level, line) => lines.push(`${level}: ${line}`), ...options });
  opened.push(r);
  return r;
}

const host = (name: string, version?: string) => registry.get(name, version).host as InferenceServable;
async function y(name: string, version?: string): Promise<number[]> {
  const out = await host(name, version).inference(row());
  return [...(out.Y!.data as Float32Array)];
}

test('none mode: every model loads at start, each served version its own host; plain requests reach the highest', async () => {
  repo.model('a', [1, 2], 'max_batch_size: 4\nversion_policy { all { } }');
  repo.model('b', [1, 3, 2]);
  const r = open();
  await r.start();
  expect(registry.listing()).toEqual([
    { name: 'a', versions: ['1', '2'], state: 'ready' },
    { name: 'b', versions: ['3'], state: 'ready' },
  ]);
  expect(r.index()).toEqual([
    { name: 'a', version: '1', state: 'READY', reason: '' },
    { name: 'a', version: '2', state: 'READY', reason: '' },
    { name: 'b', version: '3', state: 'READY', reason: '' },
  ]);
  expect(host('a', '1')).not.toBe(host('a', '2'));
  expect(host('a', '1').version).toBe('1');
  expect(host('a').version).toBe('2');
  expect(host('a').options?.maxBatchSize).toBe(4);
  expect(host('b').options?.maxBatchSize).toBe(8);
  const close = (got: number[], seed: number) => linearReference([1, 2, 3, 4], 4, 3, seed).forEach((v, j) => expect(got[j]).toBeCloseTo(v, 4));
  close(await y('a', '1'), 1);
  close(await y('a', '2'), 2);
  close(await y('a'), 2);
  close(await y('b'), 3);
  expect(() => registry.get('a', '3')).toThrow('model "a" has no version "3"; its versions are "1", "2"');
  expect(() => registry.get('b', '1')).toThrow(expect.objectContaining({ code: 'not-found', reason: 'model_version_not_found' }));
});

test('version_policy latest N and specific, as Triton defines them', async () => {
  repo.model('latest2', [1, 2, 10], 'version_policy { latest { num_versions: 2 } }');
  repo.model('specific', [1, 2, 3], 'version_policy: { specific { versions: [1, 3, 7] } }');
  const r = open();
  await r.start();
  expect(registry.versions('latest2')).toEqual(['2', '10']);
  expect(registry.versions('specific')).toEqual(['1', '3']);
  expect(lines).toContain('warn: microbatch repository: model "specific": version 7 named by version_policy has no folder; skipped');
});

test('an unknown field is warned once and the model served; a malformed config and a mismatched input are refused alone, with the file:line and both signatures', async () => {
  repo.model('good', [1], 'max_batch_size: 8\nflavour: "mint"\n');
  repo.model('broken', [1], 'max_batch_size: 8\ndynamic_batching {\n  max_queue_delay_microseconds: 100\n');
  repo.model('mismatch', [1], 'max_batch_size: 8\ninput [ { name: "X", data_type: TYPE_FP32, dims: [ 5 ] } ]');
  const r = open();
  await r.start();
  await r.start().catch(() => undefined); // a second read warns nothing new
  expect(lines.filter((l) => l.includes('flavour'))).toEqual([`warn: microbatch repository: ${join(repo.dir, 'good', 'config.pbtxt')}:2:1: unknown field "flavour"; ignored`]);
  expect(registry.names()).toEqual(['good']);
  await y('good');
  const index = r.index();
  expect(index).toContainEqual({ name: 'good', version: '1', state: 'READY', reason: '' });
  expect(index).toContainEqual({
    name: 'broken',
    state: 'UNAVAILABLE',
    reason: `${join(repo.dir, 'broken', 'config.pbtxt')}:4:1: expected a field name or "}" to close the message opened at line 2, column 18, got the end of the file`,
  });
  expect(index).toContainEqual({
    name: 'mismatch',
    version: '1',
    state: 'UNAVAILABLE',
    reason: 'the config does not match the model: input "X" has dims [4] in the model, [5] in the config. The model: inputs X TYPE_FP32 [4]; outputs Y TYPE_FP32 [3]. The config: inputs X TYPE_FP32 [5]; outputs (none)',
  });
  expect(() => registry.get('broken')).toThrow('no model named "broken"');
});

test('a model with no version folder is UNAVAILABLE with the reason', async () => {
  repo.model('empty', [], 'max_batch_size: 2');
  const r = open();
  await r.start();
  expect(r.index()).toEqual([{ name: 'empty', state: 'UNAVAILABLE', reason: `no version folder (a number, holding model.onnx) to serve under its version policy in ${join(repo.dir, 'empty')}` }]);
});

test('explicit mode: nothing loads until asked; load, index and unload as the extension defines; none mode refuses load and unload', async () => {
  repo.model('a', [1]);
  repo.model('b', [1]);
  const r = open({ modelControlMode: 'explicit' });
  await r.start();
  expect(registry.names()).toEqual([]);
  expect(r.index()).toEqual([{ name: 'a' }, { name: 'b' }]);
  await r.load('b');
  expect(r.index()).toEqual([{ name: 'a' }, { name: 'b', version: '1', state: 'READY', reason: '' }]);
  expect(r.index({ ready: true })).toEqual([{ name: 'b', version: '1', state: 'READY', reason: '' }]);
  const first = host('b');
  await r.load('b'); // unchanged: left as it is
  expect(host('b')).toBe(first);
  await r.unload('b');
  expect(registry.names()).toEqual([]);
  expect(r.index()).toEqual([{ name: 'a' }, { name: 'b', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' }]);
  await expect(first.inference(row())).rejects.toThrow(/stopped/);
  await r.load('b');
  await y('b');
  await expect(r.load('nope')).rejects.toThrow(expect.objectContaining({ code: 'not-found', message: expect.stringContaining('no model "nope" in the repository') }));
  await expect(r.load('../x')).rejects.toThrow(expect.objectContaining({ code: 'invalid-argument', message: 'model name "../x" must be a folder name (non-empty, no "/")' }));

  const none = new ModelRepository(repo.dir, new ServingRegistry('none'), { defaults: TEST_DEFAULTS });
  await expect(none.load('a')).rejects.toThrow(expect.objectContaining({ code: 'unavailable', message: "cannot load models: the repository's model control mode is 'none'; load requests need --model-control-mode explicit" }));
  await expect(none.unload('a')).rejects.toThrow(expect.objectContaining({ code: 'unavailable', reason: 'model_control_disabled' }));
});

test('explicit mode: a loadModels name the repository lacks fails the start, naming the models there', async () => {
  repo.model('a', [1]);
  await expect(open({ modelControlMode: 'explicit', loadModels: ['b'] }).start()).rejects.toThrow(`no model "b" in the repository ${repo.dir}; its models are "a"`);
});

test('explicit mode with loadModels loads those at start; a failed load rejects with the reason and leaves the model UNAVAILABLE', async () => {
  repo.model('a', [1]);
  repo.model('bad', [1], 'platform: "tensorrt_plan"');
  const r = open({ modelControlMode: 'explicit', loadModels: ['a'] });
  await r.start();
  expect(registry.names()).toEqual(['a']);
  await expect(r.load('bad')).rejects.toThrow(expect.objectContaining({ code: 'invalid-argument', message: expect.stringMatching(/^load failed for model "bad": .*config\.pbtxt: microbatch serves ONNX models/) }));
  expect(r.index()).toContainEqual(expect.objectContaining({ name: 'bad', state: 'UNAVAILABLE' }));
  await y('a');
});

test('unload answers every queued request first', async () => {
  repo.model('a', [1], 'max_batch_size: 2');
  const r = open({ modelControlMode: 'explicit', loadModels: ['a'], retireAfterMs: 0 });
  await r.start();
  const h = host('a');
  const calls = Array.from({ length: 40 }, () => h.inference(row()));
  await r.unload('a');
  const settled = await Promise.allSettled(calls);
  expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
});

test('a reload with a changed config swaps the hosts; the old ones serve until the new are registered', async () => {
  repo.model('a', [1], 'max_batch_size: 2');
  const r = open({ modelControlMode: 'explicit', loadModels: ['a'] });
  await r.start();
  const old = host('a');
  repo.model('a', [], 'max_batch_size: 6\n# changed');
  await r.load('a');
  expect(host('a')).not.toBe(old);
  expect(host('a').options?.maxBatchSize).toBe(6);
  await waitFor(async () => old.inference(row()).then(() => false, () => true), 5_000, 'the old host to stop');
});

test('poll mode: a version folder added and another removed under a steady stream, with no request failed', async () => {
  repo.model('a', [1]);
  const r = open({ modelControlMode: 'poll', pollIntervalMs: 50, retireAfterMs: 100 });
  await r.start();
  let failures = 0;
  let answers = 0;
  let running = true;
  const versionsSeen = new Set<string>();
  const stream = (async () => {
    while (running) {
      const batch = Array.from({ length: 4 }, async () => {
        try {
          const h = host('a');
          versionsSeen.add(h.version ?? '');
          await h.inference(row());
          answers++;
        } catch {
          failures++;
        }
      });
      await Promise.all(batch);
    }
  })();
  await waitFor(() => answers > 20, 10_000, 'some answers');
  repo.version('a', 2);
  await waitFor(() => registry.versions('a').join() === '2', 20_000, 'version 2 to replace version 1');
  rmSync(join(repo.dir, 'a', '1'), { recursive: true });
  repo.model('b', [4]);
  await waitFor(() => registry.versions('b').join() === '4', 20_000, 'model b to load');
  const at = answers;
  await waitFor(() => answers > at + 20, 10_000, 'more answers');
  rmSync(join(repo.dir, 'b'), { recursive: true });
  await waitFor(() => r.index().every((x) => x.name !== 'b'), 20_000, 'model b to leave');
  expect(registry.names()).toEqual(['a']);
  running = false;
  await stream;
  expect(failures).toBe(0);
  expect(versionsSeen).toEqual(new Set(['1', '2']));
  expect(r.index()).toEqual([{ name: 'a', version: '2', state: 'READY', reason: '' }]);
});

test('the constructor refuses what cannot work', () => {
  expect(() => new ModelRepository(join(repo.dir, 'missing'), registry, { defaults: TEST_DEFAULTS })).toThrow(`ModelRepository: expected a model repository folder, got ${JSON.stringify(join(repo.dir, 'missing'))} (not a folder)`);
  expect(() => new ModelRepository(repo.dir, registry, { defaults: TEST_DEFAULTS, modelControlMode: 'sometimes' as never })).toThrow('ModelRepository: modelControlMode must be one of none, poll, explicit, got "sometimes"');
  expect(() => new ModelRepository(repo.dir, registry, { defaults: TEST_DEFAULTS, loadModels: ['a'] })).toThrow("ModelRepository: loadModels needs modelControlMode 'explicit' (in 'none' every model loads at start)");
  expect(() => new ModelRepository(repo.dir, registry, { defaults: TEST_DEFAULTS, modelControlMode: 'poll', pollIntervalMs: 0 })).toThrow('ModelRepository: pollIntervalMs must be a number > 0, got 0');
});

test('poll mode reads a broken config once per change: one error, not one per poll', async () => {
  repo.model('bad', [1], 'max_batch_size: "x"');
  const r = open({ modelControlMode: 'poll', pollIntervalMs: 20 });
  await r.start();
  await r.poll();
  await r.poll();
  expect(lines.filter((l) => l.startsWith('error:'))).toEqual([
    `error: microbatch repository: model "bad" failed to load: ${join(repo.dir, 'bad', 'config.pbtxt')}:1:1: expected "max_batch_size" to be an integer from -2147483648 to 2147483647 (int32), got "x"`,
  ]);
  repo.model('bad', [], 'max_batch_size: 2 # fixed');
  await waitFor(() => registry.versions('bad').join() === '1', 10_000, 'the fixed model to load');
});

test('poll mode: a new version that fails to load leaves the version it was to replace serving, until it loads', async () => {
  repo.model('a', [1]);
  const r = open({ modelControlMode: 'poll', pollIntervalMs: 20 });
  await r.start();
  mkdirSync(join(repo.dir, 'a', '2'));
  writeFileSync(join(repo.dir, 'a', '2', 'model.onnx'), 'half a file');
  await r.poll();
  expect(registry.versions('a')).toEqual(['1']);
  expect(r.index()).toEqual([
    { name: 'a', version: '1', state: 'READY', reason: '' },
    { name: 'a', version: '2', state: 'UNAVAILABLE', reason: expect.stringContaining('model.onnx') },
  ]);
  repo.version('a', 2);
  await waitFor(() => registry.versions('a').join() === '2', 10_000, 'version 2 to replace version 1');
});
