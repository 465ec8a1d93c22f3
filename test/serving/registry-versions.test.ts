import { versionedHost } from '../../src/repository';
import { ServingRegistry, type InferenceServable } from '../../src/serving';

// A name served version by version (what a model repository does), beside names served whole.

const host = (name: string): InferenceServable => ({
  name,
  model: { inputs: [{ name: 'X', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }], outputs: [{ name: 'Y', dtype: 'float32', dims: ['N', 2], batchAxis: 0 }] },
  options: { maxBatchSize: 4 },
  inference: async (feeds) => feeds,
  stop: async () => undefined,
});
const generator = { generate: () => ({}), stop: async () => undefined };

test('versions side by side: a version reaches its host, no version the highest (numerically), remove takes one or all', () => {
  const r = new ServingRegistry('test');
  const [h2, h10] = [host('m/2'), host('m/10')];
  r.replace('m', '2', h2);
  r.replace('m', '10', h10);
  expect(r.versions('m')).toEqual(['2', '10']);
  expect(r.get('m').host).toBe(h10);
  expect(r.get('m', '2').host).toBe(h2);
  expect(r.isReady('m', '2')).toBe(true);
  expect(() => r.isReady('m', '3')).toThrow('model "m" has no version "3"; its versions are "2", "10"');
  expect(r.listing()).toEqual([{ name: 'm', versions: ['2', '10'], state: 'ready' }]);
  const h10b = host('m/10');
  r.replace('m', '10', h10b);
  expect(r.get('m', '10').host).toBe(h10b);
  expect(r.remove('m', '10')).toBe(true);
  expect(r.remove('m', '10')).toBe(false);
  expect(r.get('m').host).toBe(h2);
  expect(r.remove('m')).toBe(true);
  expect(r.names()).toEqual([]);
  expect(r.remove('m')).toBe(false);
});

test('misuse: a version of a name served whole, of the other kind, an empty version, a value of the wrong shape', () => {
  const r = new ServingRegistry('test');
  r.add('whole', host('whole'), 'model');
  expect(() => r.replace('whole', '1', host('x'))).toThrow('test: "whole" is already served whole; a name serves one model');
  r.replace('gen', '1', generator as never, 'generator');
  expect(() => r.replace('gen', '2', host('x'))).toThrow('test: "gen" serves a generator; a version of it cannot be a model');
  expect(() => r.replace('m', '', host('x'))).toThrow('test: model "m": a version must be non-empty');
  expect(() => r.replace('m', '1', {} as never)).toThrow(/test: model "m" must be a host with `model` metadata/);
  expect(() => r.replace('a/b', '1', host('x'))).toThrow('test: model name "a/b" must be non-empty and contain no "/"');
  expect(() => r.add('gen', host('x'), 'model')).toThrow('test: "gen" is served twice; a name serves one model');
});

test('a versioned host is its host with the repository version and info; methods keep working through it', async () => {
  const inner = host('m/3');
  const v = versionedHost(inner, '3', { servedVersions: () => ['1', '3'], config: {} });
  expect(v.version).toBe('3');
  expect(v.name).toBe('m/3');
  expect(v.inference).toBe(v.inference); // bound once
  await expect(v.inference({ X: { type: 'float32', data: new Float32Array(2), dims: [1, 2] } })).resolves.toBeDefined();
  expect((v as unknown as { repository: { servedVersions(): string[] } }).repository.servedVersions()).toEqual(['1', '3']);
});
