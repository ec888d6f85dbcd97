import type { Clock } from '../../src/clock.js';
import type { SystemTimer } from '../../src/timer/system-timer.js';

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  constructor(public t = 0) {}
  now(): number {
    return this.t;
  }
}

/** Deterministic PRNG (mulberry32) so property runs with thousands of timers are reproducible by seed. */
export function seededRandom(seed: number): (maxExclusive: number) => number {
  let a = seed >>> 0;
  return (maxExclusive) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const r = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    return Math.floor(r * maxExclusive);
  };
}

/** Lets pending promise callbacks (async checks, their continuations) run. Not a sleep. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Moves `clock` to `toMs` the way the real-time driver would: stopping at every expiration on the way,
 * firing what is due, and letting async continuations (which may add timers) run before going on.
 */
export async function runUntil(timer: SystemTimer, clock: FakeClock, toMs: number): Promise<void> {
  await flush();
  for (let next = timer.nextExpiration(); next !== undefined && next <= toMs; next = timer.nextExpiration()) {
    clock.t = Math.max(clock.t, next);
    timer.advanceTo(clock.t);
    await flush();
  }
  clock.t = Math.max(clock.t, toMs);
  timer.advanceTo(clock.t);
  await flush();
}
