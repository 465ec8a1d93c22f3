import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CHANNELS } from '../../src/core/observer';
import type { SequenceEvent } from '../../src/generate/events';
import { GenerationHost } from '../../src/generate/generation-host';
import type { StepInput } from '../../src/generate/options';

// A GenerationHost publishes each ended sequence on CHANNELS.sequence (what the dashboard reads
// time to first token from), beside its observer, even when that observer throws.

const counter = (observer?: { onSequence(e: SequenceEvent): void }) =>
  new GenerationHost(async (xs: ReadonlyArray<StepInput<number>>) => xs.map((x) => ({ token: x.token + 1, state: 0 })), { maxBatchSize: 4, initialState: () => 0, name: 'counter', ...(observer ? { observer } : {}) });

async function drain(stream: AsyncIterable<number>): Promise<number[]> {
  const out: number[] = [];
  for await (const t of stream) out.push(t);
  return out;
}

test('each ended generate() call is published on CHANNELS.sequence while someone subscribes, with or without an observer', async () => {
  const seen: SequenceEvent[] = [];
  const listener = (m: unknown): void => void seen.push(m as SequenceEvent);
  const host = counter();
  await drain(host.generate([1], { maxTokens: 2 })); // nobody listens: nothing is built
  subscribe(CHANNELS.sequence, listener);
  try {
    expect(await drain(host.generate([1], { maxTokens: 3 }))).toEqual([2, 3, 4]);
  } finally {
    unsubscribe(CHANNELS.sequence, listener);
    await host.stop();
  }
  expect(seen).toEqual([expect.objectContaining({ host: 'counter', outcome: 'length', promptTokens: 1, tokens: 3 })]);
  expect(seen[0]!.timeToFirstTokenMs).toBeGreaterThanOrEqual(0);
});

test('an observer that throws does not keep the event from being published', async () => {
  const seen: SequenceEvent[] = [];
  const listener = (m: unknown): void => void seen.push(m as SequenceEvent);
  const warned = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  const host = counter({ onSequence: () => { throw new Error('boom'); } });
  subscribe(CHANNELS.sequence, listener);
  try {
    await drain(host.generate([5], { maxTokens: 1 }));
  } finally {
    unsubscribe(CHANNELS.sequence, listener);
    warned.mockRestore();
    await host.stop();
  }
  expect(seen.map((e) => [e.host, e.tokens])).toEqual([['counter', 1]]);
});
