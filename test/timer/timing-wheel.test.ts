import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TimerTaskEntry, TimerTaskList } from '../../src/timer/timer-task-list.js';
import { TimingWheel } from '../../src/timer/timing-wheel.js';
import { seededRandom } from './helpers.js';

class Entry extends TimerTaskEntry {
  isCancelled = false;
  override get cancelled(): boolean {
    return this.isCancelled;
  }
}

const collect = (wheel: TimingWheel<Entry>, timeMs: number): Entry[] => {
  const out: Entry[] = [];
  wheel.advanceClock(timeMs, (e) => out.push(e));
  return out;
};

describe('TimerTaskList', () => {
  it('adds, removes in O(1) and flushes in insertion order', () => {
    const counter = { value: 0 };
    const list = new TimerTaskList<Entry>(counter);
    const [a, b, c] = [new Entry(1), new Entry(2), new Entry(3)];
    list.add(a);
    list.add(b);
    list.add(c);
    expect(counter.value).toBe(3);
    b.remove();
    b.remove(); // idempotent
    expect([...list]).toEqual([a, c]);
    expect(counter.value).toBe(2);
    expect(list.flush()).toEqual([a, c]);
    expect(list.isEmpty).toBe(true);
    expect(counter.value).toBe(0);
    expect(a.list).toBeUndefined();
  });

  it('moves an entry already in another list', () => {
    const counter = { value: 0 };
    const one = new TimerTaskList<Entry>(counter);
    const two = new TimerTaskList<Entry>(counter);
    const a = new Entry(1);
    one.add(a);
    two.add(a);
    expect([...one]).toEqual([]);
    expect([...two]).toEqual([a]);
    expect(counter.value).toBe(1);
  });
});

describe('TimingWheel', () => {
  it('validates its options', () => {
    expect(() => new TimingWheel({ tickMs: 0, wheelSize: 20, startMs: 0 })).toThrow(RangeError);
    expect(() => new TimingWheel({ tickMs: 1.5, wheelSize: 20, startMs: 0 })).toThrow(RangeError);
    expect(() => new TimingWheel({ tickMs: 1, wheelSize: 1, startMs: 0 })).toThrow(RangeError);
    expect(() => new TimingWheel({ tickMs: 1, wheelSize: 20, startMs: Number.NaN })).toThrow(RangeError);
  });

  it('truncates currentTime to a tick multiple', () => {
    const wheel = new TimingWheel<Entry>({ tickMs: 10, wheelSize: 8, startMs: 1234 });
    expect(wheel.currentTimeMs).toBe(1230);
    expect(wheel.interval).toBe(80);
    collect(wheel, 1259);
    expect(wheel.currentTimeMs).toBe(1250);
    collect(wheel, 1000); // never backwards
    expect(wheel.currentTimeMs).toBe(1250);
  });

  it('puts an entry in bucket floor(e / tickMs) and reports that bucket expiration', () => {
    const wheel = new TimingWheel<Entry>({ tickMs: 10, wheelSize: 8, startMs: 0 });
    expect(wheel.nextExpiration()).toBeUndefined();
    expect(wheel.add(new Entry(57))).toBe(true);
    expect(wheel.add(new Entry(23))).toBe(true);
    expect(wheel.nextExpiration()).toBe(20);
    expect(wheel.size).toBe(2);
  });

  it('refuses an already expired entry (in the current tick or earlier) and a cancelled one', () => {
    const wheel = new TimingWheel<Entry>({ tickMs: 10, wheelSize: 8, startMs: 100 });
    expect(wheel.add(new Entry(50))).toBe(false);
    expect(wheel.add(new Entry(100))).toBe(false);
    expect(wheel.add(new Entry(109.9))).toBe(false);
    expect(wheel.add(new Entry(110))).toBe(true);
    const cancelled = new Entry(150);
    cancelled.isCancelled = true;
    expect(wheel.add(cancelled)).toBe(false);
    expect(wheel.size).toBe(1);
    expect(() => wheel.add(new Entry(Number.POSITIVE_INFINITY))).toThrow(RangeError);
  });

  it('hands out a level-0 bucket when its tick starts', () => {
    const wheel = new TimingWheel<Entry>({ tickMs: 10, wheelSize: 8, startMs: 0 });
    const a = new Entry(25);
    const b = new Entry(29);
    wheel.add(a);
    wheel.add(b);
    expect(collect(wheel, 19)).toEqual([]);
    expect(collect(wheel, 20)).toEqual([a, b]);
    expect(wheel.size).toBe(0);
    expect(wheel.nextExpiration()).toBeUndefined();
  });

  it('creates overflow wheels on demand and cascades their buckets down', () => {
    const wheel = new TimingWheel<Entry>({ tickMs: 1, wheelSize: 10, startMs: 0 });
    const near = new Entry(5);
    const mid = new Entry(57); // level 1: tick 10
    const far = new Entry(5_432); // level 3: tick 1000
    for (const e of [near, mid, far]) expect(wheel.add(e)).toBe(true);
    expect(wheel.levelCount).toBe(4);
    expect(wheel.nextExpiration()).toBe(5);
    expect(collect(wheel, 5)).toEqual([near]);
    expect(wheel.nextExpiration()).toBe(50); // mid's level-1 bucket [50, 60)
    expect(collect(wheel, 56)).toEqual([]); // cascaded to level 0, bucket 57
    expect(wheel.nextExpiration()).toBe(57);
    expect(collect(wheel, 57)).toEqual([mid]);
    expect(wheel.nextExpiration()).toBe(5_000); // far's level-3 bucket [5000, 6000)
    expect(collect(wheel, 5_431)).toEqual([]);
    expect(wheel.nextExpiration()).toBe(5_432);
    expect(collect(wheel, 10_000)).toEqual([far]);
    expect(wheel.size).toBe(0);
  });

  it('forgets a bucket whose entries were all cancelled', () => {
    const wheel = new TimingWheel<Entry>({ tickMs: 1, wheelSize: 10, startMs: 0 });
    const a = new Entry(5);
    const b = new Entry(500);
    wheel.add(a);
    wheel.add(b);
    a.remove();
    expect(wheel.nextExpiration()).toBe(500);
    b.remove();
    expect(wheel.nextExpiration()).toBeUndefined();
    expect(wheel.size).toBe(0);
    const c = new Entry(5); // the forgotten bucket can be queued again
    wheel.add(c);
    expect(wheel.nextExpiration()).toBe(5);
    expect(collect(wheel, 5)).toEqual([c]);
  });

  it('hands out every entry exactly once, in the first advance whose tick reaches its tick', () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 2, max: 64 }),
        fc.integer({ min: 1, max: 200_000 }),
        (seed, tickMs, wheelSize, maxDelay) => {
          const rnd = seededRandom(seed);
          const start = rnd(1_000_000);
          const wheel = new TimingWheel<Entry>({ tickMs, wheelSize, startMs: start });
          const tick = (t: number): number => Math.floor(t / tickMs);
          const entries: Entry[] = [];
          for (let i = 0; i < 1000; i++) {
            const e = new Entry(wheel.currentTimeMs + tickMs + rnd(maxDelay));
            expect(wheel.add(e)).toBe(true);
            entries.push(e);
          }
          const handedAt = new Map<Entry, number>();
          const end = start + maxDelay + 2 * tickMs;
          let prev = start;
          for (let now = start; now <= end; ) {
            prev = now;
            now += 1 + rnd(Math.max(1, Math.floor(maxDelay / 50)));
            wheel.advanceClock(now, (e) => {
              expect(handedAt.has(e)).toBe(false);
              handedAt.set(e, now);
            });
            for (const [e, at] of handedAt) if (at === now) expect(tick(prev) < tick(e.expirationMs)).toBe(true);
          }
          expect(handedAt.size).toBe(entries.length);
          for (const e of entries) expect(tick(handedAt.get(e)!)).toBeGreaterThanOrEqual(tick(e.expirationMs));
          expect(wheel.size).toBe(0);
        },
      ),
      { numRuns: 20 },
    );
  });
});
