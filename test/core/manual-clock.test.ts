import { ManualClock } from '../../src/core/manual-clock';

describe('ManualClock', () => {
  test('fires timers in time order, ties in creation order, with now() at the due time', () => {
    const clock = new ManualClock(10);
    const seen: string[] = [];
    clock.setTimer(() => seen.push(`b@${clock.now()}`), 5);
    clock.setTimer(() => seen.push(`a@${clock.now()}`), 2);
    clock.setTimer(() => seen.push(`c@${clock.now()}`), 5);
    clock.advance(4);
    expect(seen).toEqual(['a@12']);
    expect(clock.now()).toBe(14);
    clock.advance(10);
    expect(seen).toEqual(['a@12', 'b@15', 'c@15']);
    expect(clock.now()).toBe(24);
  });

  test('fires timers set by timers when they fall due, and not cleared ones', () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const cleared = clock.setTimer(() => seen.push(-1), 1);
    clock.clearTimer(cleared);
    clock.setTimer(() => clock.setTimer(() => seen.push(clock.now()), 3), 1);
    expect(clock.nextTimerAt).toBe(1);
    clock.advance(10);
    expect(seen).toEqual([4]);
    expect(clock.pendingTimers).toBe(0);
  });

  test('rejects moving backwards', () => {
    expect(() => new ManualClock().advance(-1)).toThrow(new RangeError('ManualClock.advance expects a number of milliseconds >= 0, got -1'));
  });
});
