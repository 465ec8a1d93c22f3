import 'reflect-metadata';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { container as globalContainer, inject, injectable } from 'tsyringe';
import { batching } from '../../src/api/batching';
import { createHost } from '../../src/api/create-host';
import { asBatching } from '../../src/api/generated-inference';
import { OnnxSession } from '../../src/api/tokens';
import { HostStoppedError } from '../../src/core/errors';
import { linearModel, seeded } from '../support/onnx-models';

const FEATURES = 4;
const OUTPUTS = 3;

/**
 * The decorator style on a real onnxruntime session: one `[N, 4]` tensor per batch, one
 * `session.run` per batch, output rows sliced back per item.
 */
@injectable()
class Linear {
  /** Every instance built, so a test can read the model-call count of the one a host resolved. */
  static readonly built: Linear[] = [];
  runs = 0;
  constructor(@inject(OnnxSession) private readonly session: InferenceSession) {
    Linear.built.push(this);
  }

  @batching({ maxBatchSize: 32 })
  async predictBatch(rows: readonly Float32Array[]): Promise<Float32Array[]> {
    const x = new Float32Array(rows.length * FEATURES);
    rows.forEach((r, i) => x.set(r, i * FEATURES));
    this.runs++;
    const { Y } = await this.session.run({ X: new Tensor('float32', x, [rows.length, FEATURES]) });
    const y = (Y as Tensor).data as Float32Array;
    return rows.map((_, i) => y.slice(i * OUTPUTS, (i + 1) * OUTPUTS));
  }
}

/** One un-batched `session.run` for a single row: the reference. */
async function runAlone(session: InferenceSession, row: Float32Array): Promise<number[]> {
  const { Y } = await session.run({ X: new Tensor('float32', row, [1, FEATURES]) });
  return Array.from((Y as Tensor).data as Float32Array);
}

function rowsFor(count: number): Float32Array[] {
  const all = seeded(count * FEATURES, 11);
  return Array.from({ length: count }, (_, i) => all.slice(i * FEATURES, (i + 1) * FEATURES));
}

function expectSameNumbers(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let j = 0; j < expected.length; j++) expect(Math.abs((actual[j] as number) - (expected[j] as number))).toBeLessThanOrEqual(1e-6);
}

describe('decorator style with onnxruntime-node', () => {
  const bytes = linearModel(FEATURES, OUTPUTS);

  test('200 concurrent inference() calls match one un-batched session.run per item, in fewer model calls; stop() releases the session', async () => {
    let session: InferenceSession | undefined;
    const before = Linear.built.length;
    // The model is a generated ONNX file on disk, loaded asynchronously by the provider.
    const dir = await mkdtemp(join(tmpdir(), 'microbatch-decorator-'));
    const file = join(dir, 'linear.onnx');
    await writeFile(file, bytes);
    const host = await createHost(Linear, {
      context: {
        [OnnxSession]: async () => (session = await InferenceSession.create(file)),
      },
    }).finally(() => rm(dir, { recursive: true, force: true }));
    expect(Linear.built.length).toBe(before + 1);
    const model = Linear.built.at(-1)!;
    const rows = rowsFor(200);
    const results = await Promise.all(rows.map((r) => host.inference(r)));

    const reference = await InferenceSession.create(bytes);
    for (let i = 0; i < rows.length; i++) expectSameNumbers(results[i]!, await runAlone(reference, rows[i]!));
    await reference.release();

    // one session.run per batch, counted by the model itself; a backlog of 200 drains in full batches
    expect(model.runs).toBe(host.stats.batches);
    expect(model.runs).toBeLessThanOrEqual(Math.ceil(200 / 32) + 1);
    expect(host.stats).toMatchObject({ requests: 200, rows: 200 });

    await host.stop();
    await expect(session!.run({ X: new Tensor('float32', rows[0]!, [1, FEATURES]) })).rejects.toThrow(/disposed/);
  });

  test('generated instance inference() batches a real session across callers and is torn down by asyncDispose', async () => {
    const session = await InferenceSession.create(bytes);
    const child = globalContainer.createChildContainer();
    child.register(OnnxSession, { useValue: session });
    const model = asBatching(child.resolve(Linear));
    const rows = rowsFor(50);
    const out = await Promise.all(rows.map((r) => model.inference(r)));
    for (let i = 0; i < rows.length; i++) expectSameNumbers(out[i]!, await runAlone(session, rows[i]!));
    expect(model.runs).toBeLessThan(50);
    await model[Symbol.asyncDispose]();
    await expect(model.inference(rows[0]!)).rejects.toBeInstanceOf(HostStoppedError);
    // the session was the caller's (registered as a value): still usable
    expect((await runAlone(session, rows[0]!)).length).toBe(OUTPUTS);
    await session.release();
  });
});
