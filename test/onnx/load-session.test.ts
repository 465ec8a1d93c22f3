import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { MicrobatchError } from '../../src/core/errors';
import { loadSession, ModelLoadError, SESSION_DEFAULTS } from '../../src/onnx';
import { linearModel, linearReference } from '../support/onnx-models';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'microbatch-onnx-'));
  writeFileSync(join(dir, 'linear.onnx'), linearModel());
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function runsLinear(session: Awaited<ReturnType<typeof loadSession>>): Promise<void> {
  const x = new Float32Array([1, 2, 3, 4]);
  const out = await session.run({ X: new Tensor('float32', x, [1, 4]) });
  const ref = linearReference(x);
  Array.from(out.Y!.data as Float32Array).forEach((v, i) => expect(v).toBeCloseTo(ref[i]!, 5));
}

test('defaults are the cpu provider and full graph optimization', () => {
  expect(SESSION_DEFAULTS).toEqual({ executionProviders: ['cpu'], graphOptimizationLevel: 'all' });
});

test('loads from a path, with thread options', async () => {
  const session = await loadSession(join(dir, 'linear.onnx'), { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'basic' });
  expect(session.inputNames).toEqual(['X']);
  await runsLinear(session);
  await session.release();
});

test('executionProviders reach onnxruntime: a provider object runs, an unknown provider is a ModelLoadError naming it', async () => {
  const session = await loadSession(linearModel(), { executionProviders: [{ name: 'cpu', useArena: false }] });
  await runsLinear(session);
  await session.release();
  const err = (await loadSession(linearModel(), { executionProviders: ['nosuch'] }).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(ModelLoadError);
  expect(err.message).toMatch(/^loadSession: onnxruntime could not load a model from \d+ bytes: .*\[nosuch\] backend not found/);
});

test('loads from bytes: Uint8Array, Buffer, a view with an offset, an ArrayBuffer, and shared memory (copied)', async () => {
  const bytes = linearModel();
  const padded = new Uint8Array(bytes.length + 7);
  padded.set(bytes, 7);
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.length));
  shared.set(bytes);
  const exact = new ArrayBuffer(bytes.length);
  new Uint8Array(exact).set(bytes);
  for (const source of [bytes, readFileSync(join(dir, 'linear.onnx')), padded.subarray(7), exact, shared]) {
    const session = await loadSession(source);
    await runsLinear(session);
    await session.release();
  }
});

test('a missing file is a ModelLoadError that names the absolute path', async () => {
  const missing = join(dir, 'nope.onnx');
  const err = await loadSession(missing).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ModelLoadError);
  expect(err).toBeInstanceOf(MicrobatchError);
  expect((err as Error).message).toBe(`loadSession: no model file at ${JSON.stringify(missing)}: ENOENT`);
});

test('a directory is not a model file', async () => {
  await expect(loadSession(dir)).rejects.toThrow(new ModelLoadError(`loadSession: ${JSON.stringify(dir)} is not a file`));
});

test("garbage bytes are a ModelLoadError carrying onnxruntime's reason", async () => {
  const err = (await loadSession(new Uint8Array([1, 2, 3, 4, 5])).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(ModelLoadError);
  expect(err.message).toMatch(/^loadSession: onnxruntime could not load a model from 5 bytes: .*protobuf parsing failed/);
  // onnxruntime's native error comes from the host realm, so compare by content, not instanceof.
  expect((err.cause as Error).message).toMatch(/protobuf parsing failed/);
});

test('a file that is not a model names the file', async () => {
  const bad = join(dir, 'bad.onnx');
  writeFileSync(bad, 'not a model');
  const err = (await loadSession(bad).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(ModelLoadError);
  const prefix = `loadSession: onnxruntime could not load a model from the file ${JSON.stringify(bad)}: `;
  expect(err.message.slice(0, prefix.length)).toBe(prefix);
  expect(err.message.length).toBeGreaterThan(prefix.length); // onnxruntime's reason follows
});

test('bad arguments are TypeError/RangeError', async () => {
  await expect(loadSession(42 as never)).rejects.toThrow(
    new TypeError('loadSession: expected a model path (string) or the model bytes (Uint8Array, Buffer or ArrayBuffer), got 42 (number)'),
  );
  await expect(loadSession('')).rejects.toThrow(TypeError);
  await expect(loadSession(new Uint8Array(0))).rejects.toThrow(new ModelLoadError('loadSession: the model bytes are empty'));
  await expect(loadSession(linearModel(), { intraOpNumThreads: -1 })).rejects.toThrow(
    new RangeError("loadSession: expected `intraOpNumThreads` to be an integer >= 0 (0: onnxruntime's choice), got -1 (number)"),
  );
  await expect(loadSession(linearModel(), { interOpNumThreads: 1.5 })).rejects.toThrow(RangeError);
});

/** Ids of this process's threads that may run on one CPU only (Linux: a single CPU in Cpus_allowed_list). */
function pinnedThreads(): Set<string> {
  return new Set(
    readdirSync('/proc/self/task').filter((task) => {
      try {
        const allowed = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/self/task/${task}/status`, 'utf8'))?.[1] ?? '';
        return /^\d+$/.test(allowed);
      } catch {
        return false; // the thread exited while we looked
      }
    }),
  );
}

/** Pinned threads that appeared since `before` (by thread id: a released session's threads may still be exiting). */
const newPinned = (before: Set<string>): string[] => [...pinnedThreads()].filter((id) => !before.has(id));

/** onnxruntime's pool threads set their affinity as they start, some milliseconds after create() (~20 ms here). */
async function pinnedWithin(before: Set<string>, ms: number): Promise<string[]> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (newPinned(before).length > 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return newPinned(before);
}

test("unset intraOpNumThreads uses every available CPU without onnxruntime's pinning; 0 still asks onnxruntime", async () => {
  let before = pinnedThreads();
  const ours = await loadSession(linearModel());
  await runsLinear(ours);
  expect(await pinnedWithin(before, 300)).toEqual([]);
  // onnxruntime picks the count itself here, and pins its pool threads to single CPUs: the
  // behaviour the default avoids. On a one-CPU machine there is no pool to pin
  before = pinnedThreads();
  const theirs = await loadSession(linearModel(), { intraOpNumThreads: 0 });
  await runsLinear(theirs);
  // (one pinned thread per core but the caller's: 1 on the 2-core test machine)
  if (availableParallelism() > 1) expect((await pinnedWithin(before, 2000)).length).toBeGreaterThan(0);
  await theirs.release();
  await ours.release();
});

test("spin-waiting reaches onnxruntime as off unless extra sets it, in either form; other extra entries are kept", async () => {
  const ort = await import('onnxruntime-node');
  const create = jest.spyOn(ort.InferenceSession, 'create');
  const extraOf = async (options: Parameters<typeof loadSession>[1]): Promise<unknown> => {
    create.mockClear();
    await (await loadSession(linearModel(), options)).release();
    expect(create).toHaveBeenCalledTimes(1);
    return (create.mock.calls[0]![1] as { extra?: unknown }).extra;
  };
  try {
    expect(await extraOf({})).toEqual({ session: { intra_op: { allow_spinning: '0' } } });
    expect(await extraOf({ extra: { session: { intra_op: { allow_spinning: '1' } } } })).toEqual({ session: { intra_op: { allow_spinning: '1' } } });
    expect(await extraOf({ extra: { 'session.intra_op.allow_spinning': '1' } })).toEqual({ 'session.intra_op.allow_spinning': '1' });
    expect(await extraOf({ extra: { session: { use_env_allocators: '0' } } })).toEqual({ session: { use_env_allocators: '0', intra_op: { allow_spinning: '0' } } });
  } finally {
    create.mockRestore();
  }
});

test('extra must be an object', async () => {
  await expect(loadSession(linearModel(), { extra: 'fast' as never })).rejects.toThrow(
    new TypeError('loadSession: expected `extra` to be an object of onnxruntime config entries, got "fast" (string)'),
  );
});
