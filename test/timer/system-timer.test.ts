import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SystemTimer, type TimerTask } from '../../src/timer/system-timer.js';
import { FakeClock, seededRandom } from './helpers.js';

const newTimer = (clock: FakeClock, opts: { tickMs?: number; wheelSize?: number } = {}): SystemTimer =>
  new SystemTimer({ clock, ...opts });

describe('SystemTimer with a controllable clock', () => {
  it('fires a task at its expiration, not before, and only once', () => {
    const clock = new FakeClock(1000);
    const timer = newTimer(clock);
    const fired: number[] = [];
    const task = timer.add(30, () => fired.push(clock.now()));
    expect(task.expirationMs).toBe(1030);
    expect(task.state).toBe('pending');
    expect(timer.size).toBe(1);
    expect(timer.advanceTo(1029)).toBe(0);
    expect(timer.advanceTo(1030)).toBe(1);
    expect(timer.advanceTo(5000)).toBe(0);
    expect(fired).toEqual([1000]); // run() saw the clock untouched: advanceTo does not move it
    expect(task.state).toBe('fired');
    expect(task.cancel()).toBe(false);
    expect(timer.size).toBe(0);
  });

  it('never fires early even when a tick spans many milliseconds', () => {
    const clock = new FakeClock(0);
    const timer = newTimer(clock, { tickMs: 100, wheelSize: 4 });
    const fired: string[] = [];
    timer.add(130, () => fired.push('a'));
    timer.add(170, () => fired.push('b'));
    timer.advanceTo(100); // bucket [100, 200) comes due, neither task has expired
    expect(fired).toEqual([]);
    timer.advanceTo(150);
    expect(fired).toEqual(['a']);
    expect(timer.nextExpiration()).toBe(170);
    timer.advanceTo(170);
    expect(fired).toEqual(['a', 'b']);
  });

  it('holds a zero-delay (already expired) task until the next advance', () => {
    const clock = new FakeClock(50);
    const timer = newTimer(clock);
    let runs = 0;
    timer.add(0, () => runs++);
    timer.add(-5, () => runs++); // clamped to 0
    expect(runs).toBe(0);
    expect(timer.nextExpiration()).toBe(50);
    expect(timer.advanceTo(50)).toBe(2);
    expect(runs).toBe(2);
    expect(() => timer.add(Number.NaN, () => {})).toThrow(RangeError);
    expect(() => timer.add(Number.POSITIVE_INFINITY, () => {})).toThrow(RangeError);
  });

  it('fires tasks with equal expirations in the order they were added', () => {
    const clock = new FakeClock();
    const timer = newTimer(clock, { tickMs: 10, wheelSize: 4 });
    const order: number[] = [];
    for (let i = 0; i < 10; i++) timer.add(i % 2 === 0 ? 500 : 25, () => order.push(i));
    timer.advanceTo(1000);
    expect(order).toEqual([1, 3, 5, 7, 9, 0, 2, 4, 6, 8]);
  });

  it('never fires a task cancelled before its expiration', () => {
    const clock = new FakeClock();
    const timer = newTimer(clock);
    let ran = false;
    const task = timer.add(10, () => (ran = true));
    const due = timer.add(0, () => (ran = true)); // sits in the due heap, not the wheel
    expect(task.cancel()).toBe(true);
    expect(task.cancel()).toBe(false);
    expect(due.cancel()).toBe(true);
    expect(task.state).toBe('cancelled');
    expect(timer.size).toBe(0);
    expect(timer.nextExpiration()).toBeUndefined();
    timer.advanceTo(100);
    expect(ran).toBe(false);
  });

  it('handles delays far beyond the wheel interval through overflow wheels', () => {
    const clock = new FakeClock();
    const timer = newTimer(clock, { tickMs: 1, wheelSize: 4 }); // interval 4 ms
    const fired: number[] = [];
    const delays = [3, 17, 64, 1_000, 86_400_000, 7 * 86_400_000];
    for (const d of delays) timer.add(d, () => fired.push(d));
    for (const d of delays) {
      expect(timer.advanceTo(d - 1)).toBe(0);
      expect(timer.advanceTo(d)).toBe(1);
    }
    expect(fired).toEqual(delays);
  });

  it('runs tasks added by a firing task when they are due in the same pass', () => {
    const clock = new FakeClock();
    const timer = newTimer(clock, { tickMs: 5, wheelSize: 4 });
    const order: string[] = [];
    timer.add(10, () => {
      clock.t = 10;
      order.push('a');
      timer.add(0, () => order.push('a+0'));
      timer.add(1, () => order.push('a+1'));
    });
    timer.advanceTo(10);
    expect(order).toEqual(['a', 'a+0']);
    timer.advanceTo(11);
    expect(order).toEqual(['a', 'a+0', 'a+1']);
  });

  it('keeps firing when a task throws, then rethrows (or reports to onError)', () => {
    const clock = new FakeClock();
    const timer = newTimer(clock);
    const ran: number[] = [];
    timer.add(1, () => ran.push(1));
    timer.add(2, () => {
      throw new Error('boom');
    });
    timer.add(3, () => ran.push(3));
    expect(() => timer.advanceTo(5)).toThrow('boom');
    expect(ran).toEqual([1, 3]);
    expect(timer.size).toBe(0);

    const errors: unknown[] = [];
    const reporting = new SystemTimer({ clock, onError: (e) => errors.push(e) });
    reporting.add(1, () => {
      throw new Error('x');
    });
    reporting.add(1, () => {
      throw new Error('y');
    });
    expect(reporting.advanceTo(10)).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['x', 'y']);
  });

  it('refuses advanceTo from inside a task', () => {
    const clock = new FakeClock();
    const timer = newTimer(clock);
    timer.add(1, () => timer.advanceTo(2));
    expect(() => timer.advanceTo(1)).toThrow(/inside a timer task/);
  });

  it('advanceClock(0) fires what is due on the clock', async () => {
    const clock = new FakeClock();
    const timer = newTimer(clock);
    let runs = 0;
    timer.add(10, () => runs++);
    expect(await timer.advanceClock()).toBe(false);
    clock.t = 10;
    expect(await timer.advanceClock()).toBe(true);
    expect(runs).toBe(1);
  });

  it('fires thousands of random timers exactly once, in order, never early, at most a tick late', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 2, max: 32 }),
        fc.integer({ min: 10, max: 500_000 }),
        (seed, tickMs, wheelSize, maxDelay) => {
          const rnd = seededRandom(seed);
          const clock = new FakeClock(rnd(1_000_000));
          const timer = newTimer(clock, { tickMs, wheelSize });
          const count = 2000;
          const runs = new Array<number>(count).fill(0);
          const firedAt = new Array<number>(count).fill(-1);
          const expirations: number[] = [];
          const firedOrder: number[] = [];
          const cancelled = new Set<number>();
          const tasks: TimerTask[] = [];
          let now = clock.now();
          let prevNow = now;
          const step = (maxStep: number): void => {
            prevNow = now;
            now += 1 + rnd(maxStep);
            clock.t = now;
            timer.advanceTo(now);
          };
          for (let i = 0; i < count; i++) {
            // Add while time moves, so tasks land relative to different wheel positions.
            if (i % 100 === 99) step(tickMs);
            const addedAt = now;
            const task = timer.add(rnd(maxDelay), () => {
              runs[i]!++;
              firedAt[i] = now;
              firedOrder.push(i);
              // Fired in the first advance after its add that reached its expiration.
              if (prevNow > addedAt) expect(task.expirationMs).toBeGreaterThan(prevNow);
            });
            tasks.push(task);
            expirations.push(task.expirationMs);
          }
          for (let i = 0; i < count; i += 7) {
            if (tasks[i]!.state === 'pending') {
              expect(tasks[i]!.cancel()).toBe(true);
              cancelled.add(i);
            }
          }
          expect(timer.size).toBe(count - cancelled.size - firedOrder.length);
          // Steps of at most one tick: every task fires less than a tick after its expiration.
          while (timer.size > 0) step(tickMs);
          for (let i = 0; i < count; i++) {
            if (cancelled.has(i)) {
              expect(runs[i]).toBe(0);
              continue;
            }
            expect(runs[i]).toBe(1);
            expect(firedAt[i]).toBeGreaterThanOrEqual(expirations[i]!);
            expect(firedAt[i]! - expirations[i]!).toBeLessThanOrEqual(tickMs);
          }
          for (let k = 1; k < firedOrder.length; k++) {
            expect(expirations[firedOrder[k]!]).toBeGreaterThanOrEqual(expirations[firedOrder[k - 1]!]!);
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it('with large random steps, fires each task in the first advance reaching it, in order', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 1, max: 20 }), (seed, tickMs) => {
        const rnd = seededRandom(seed);
        const clock = new FakeClock();
        const timer = newTimer(clock, { tickMs, wheelSize: 8 });
        const fired: { e: number; at: number; prev: number }[] = [];
        let now = 0;
        let prev = 0;
        for (let i = 0; i < 3000; i++) {
          const task: TimerTask = timer.add(rnd(1_000_000), () => fired.push({ e: task.expirationMs, at: now, prev }));
        }
        while (timer.size > 0) {
          prev = now;
          now += rnd(20_000);
          timer.advanceTo(now);
        }
        expect(fired).toHaveLength(3000);
        for (const [k, f] of fired.entries()) {
          expect(f.e).toBeLessThanOrEqual(f.at);
          if (f.prev > 0) expect(f.e).toBeGreaterThan(f.prev); // all were added at 0
          if (k > 0) expect(f.e).toBeGreaterThanOrEqual(fired[k - 1]!.e);
        }
      }),
      { numRuns: 10 },
    );
  });
});

describe('SystemTimer real-time driver', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('arms one timeout at the earliest expiration, re-arms for an earlier task, and none when idle', () => {
    vi.useFakeTimers();
    const clock = { now: () => Date.now() };
    const timer = new SystemTimer({ clock, tickMs: 1, wheelSize: 8 });
    const fired: string[] = [];
    timer.startRealTime();
    expect(vi.getTimerCount()).toBe(0);
    const start = Date.now();
    timer.add(5_000, () => fired.push('late'));
    expect(vi.getTimerCount()).toBe(1);
    timer.add(100, () => fired.push('early'));
    expect(vi.getTimerCount()).toBe(1);
    timer.add(3_000, () => fired.push('middle'));
    vi.advanceTimersByTime(99);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual(['early']);
    expect(Date.now() - start).toBe(100);
    vi.advanceTimersByTime(2_900);
    expect(fired).toEqual(['early', 'middle']);
    vi.advanceTimersByTime(2_000);
    expect(fired).toEqual(['early', 'middle', 'late']);
    expect(vi.getTimerCount()).toBe(0);

    timer.add(100, () => fired.push('after stop'));
    timer.stop();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(fired).toHaveLength(3);
    timer.startRealTime();
    vi.advanceTimersByTime(0);
    expect(fired.at(-1)).toBe('after stop');
  });

  it('waits in advanceClock(timeoutMs) for the next expiration', async () => {
    vi.useFakeTimers();
    const timer = new SystemTimer({ clock: { now: () => Date.now() } });
    let runs = 0;
    timer.add(300, () => runs++);
    const result = timer.advanceClock(1_000);
    await vi.advanceTimersByTimeAsync(300);
    expect(await result).toBe(true);
    expect(runs).toBe(1);
    const idle = timer.advanceClock(50);
    await vi.advanceTimersByTimeAsync(50);
    expect(await idle).toBe(false);
  });

  it('fires in real time without keeping the process alive', async () => {
    const timer = new SystemTimer();
    const timeouts = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    timer.startRealTime();
    const start = performance.now();
    let guard: ReturnType<typeof setTimeout> | undefined;
    const firedAfter = await new Promise<number>((resolve) => {
      timer.add(20, () => resolve(performance.now() - start));
      timer.add(60_000, () => {});
      expect(timeouts()).toBe(before); // the armed timeout is unref'd
      guard = setTimeout(() => resolve(-1), 2_000); // only so a failure cannot hang the test
    });
    clearTimeout(guard);
    timer.stop();
    expect(firedAfter).toBeGreaterThanOrEqual(19);
  });
});
