import { ModelHost } from '../../src/engine/model-host';
import { ListBatcher } from '../../src/batchers/list-batcher';
import type { Partition } from '../../src/core/batcher';
import { ManualClock } from '../../src/core/manual-clock';
import type { BatchEvent } from '../../src/core/observer';
import { ControlledModel, settle } from '../support/controlled-model';

/** An item tagged with the group it must run in (as a length bucket or a shape would decide). */
interface Tagged {
  readonly group: string;
  readonly value: number;
}

/** A ListBatcher that splits a released batch into one group per tag, in order of first sight. */
class ByTag extends ListBatcher<Tagged, number> {
  partition(items: readonly Tagged[]): Partition {
    const groups = new Map<string, number[]>();
    items.forEach((item, i) => {
      const g = groups.get(item.group) ?? [];
      g.push(i);
      groups.set(item.group, g);
    });
    return { groups: [...groups.values()] };
  }
}

function setup(maxConcurrentBatches: number) {
  const model = new ControlledModel<Tagged, number>();
  const events: BatchEvent[] = [];
  const host = new ModelHost(model.fn, {
    maxBatchSize: 16,
    maxConcurrentBatches,
    batcher: new ByTag(),
    clock: new ManualClock(),
    observer: { onBatch: (e) => events.push(e) },
  });
  return { model, host, events };
}

const tagged = (spec: string): Tagged[] => [...spec].map((group, value) => ({ group, value }));
const groupsOf = (model: ControlledModel<Tagged, number>): string[] => model.calls.map((c) => c.items.map((i) => i.group).join(''));

describe('sub-batches of one released batch', () => {
  test('with one batch slot (the default) they run one after another, in order', async () => {
    const { model, host } = setup(1);
    const ps = tagged('abab').map((x) => host.inference(x));
    await settle();
    expect(groupsOf(model)).toEqual(['aa']);
    expect(host.stats.runningBatches).toBe(1);
    model.answer(0, (x) => x.value * 10);
    await settle();
    expect(groupsOf(model)).toEqual(['aa', 'bb']);
    model.answer(1, (x) => x.value * 10);
    await expect(Promise.all(ps)).resolves.toEqual([0, 10, 20, 30]);
  });

  test('with free slots they run at the same time, each group on a slot, and the slots come back', async () => {
    const { model, host, events } = setup(3);
    const ps = tagged('abcabc').map((x) => host.inference(x));
    await settle();
    expect(groupsOf(model)).toEqual(['aa', 'bb', 'cc']);
    expect(host.stats).toMatchObject({ runningBatches: 3, running: 6, batches: 1 });
    // Answered out of order: every caller still gets its own result.
    model.answer(2, (x) => -x.value);
    model.answer(0, (x) => x.value);
    model.answer(1, (x) => x.value + 100);
    await expect(Promise.all(ps)).resolves.toEqual([0, 101, -2, 3, 104, -5]);
    await settle();
    expect(host.stats).toMatchObject({ runningBatches: 0, running: 0 });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ requests: 6, modelCalls: 3, succeeded: 6 });
  });

  test('more groups than free slots: a slot that finishes a group takes the next one', async () => {
    const { model, host } = setup(2);
    const ps = tagged('abc').map((x) => host.inference(x));
    await settle();
    expect(groupsOf(model)).toEqual(['a', 'b']);
    model.answer(1, (x) => x.value); // the second slot frees first and takes group c
    await settle();
    expect(groupsOf(model)).toEqual(['a', 'b', 'c']);
    expect(host.stats.runningBatches).toBe(2);
    model.answer(2, (x) => x.value);
    await settle();
    // That runner found no group left and gave its slot back; the first group still runs.
    expect(host.stats.runningBatches).toBe(1);
    model.answer(0, (x) => x.value);
    await expect(Promise.all(ps)).resolves.toEqual([0, 1, 2]);
  });

  test('groups borrow only slots that are free: a running batch keeps its own', async () => {
    const { model, host } = setup(2);
    const first = host.inference({ group: 'x', value: 7 });
    await settle();
    expect(groupsOf(model)).toEqual(['x']);
    const ps = tagged('ab').map((x) => host.inference(x));
    await settle();
    // One slot is busy with the first batch: the second batch's groups share the other slot.
    expect(groupsOf(model)).toEqual(['x', 'a']);
    expect(host.stats.runningBatches).toBe(2);
    model.answer(0, (x) => x.value);
    await expect(first).resolves.toBe(7);
    await settle();
    expect(groupsOf(model)).toEqual(['x', 'a']); // group b waits for its own batch's slot, in order
    model.answer(1, (x) => x.value);
    await settle();
    expect(groupsOf(model)).toEqual(['x', 'a', 'b']);
    model.answer(2, (x) => x.value);
    await expect(Promise.all(ps)).resolves.toEqual([0, 1]);
  });

  test('a borrowed slot is given back before the next batch is released, and stop() waits for every group', async () => {
    const { model, host } = setup(2);
    const ps = tagged('ab').map((x) => host.inference(x));
    await settle();
    expect(groupsOf(model)).toEqual(['a', 'b']);
    const later = host.inference({ group: 'z', value: 9 });
    await settle();
    expect(groupsOf(model)).toEqual(['a', 'b']); // both slots busy: the new request waits
    model.answer(1, (x) => x.value);
    await settle();
    expect(groupsOf(model)).toEqual(['a', 'b', 'z']); // the borrowed slot went back and served it
    let stopped = false;
    const stopping = host.stop().then(() => (stopped = true));
    model.answer(2, (x) => x.value);
    await settle();
    expect(stopped).toBe(false); // group a is still running
    model.answer(0, (x) => x.value);
    await stopping;
    await expect(Promise.all([...ps, later])).resolves.toEqual([0, 1, 9]);
  });

  test('a failing group rejects only its own items while the others run on', async () => {
    const { model, host } = setup(2);
    const ps = tagged('ab').map((x) => host.inference(x).catch((e: Error) => e.message));
    await settle();
    model.calls[0]?.reject(new Error('group a broke'));
    model.answer(1, (x) => x.value);
    await expect(Promise.all(ps)).resolves.toEqual(['group a broke', 1]);
  });
});
