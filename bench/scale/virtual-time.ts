import type { Clock } from '../../src/clock.js';
import { BinaryHeap } from '../../src/timer/binary-heap.js';

/**
 * Simulated time for the scale simulation: a clock the code under test reads, and `sleep`s that
 * the driver wakes in time order. The latency injected per storage call is a `sleep`, so ten
 * thousand partitions at 37 ms each take minutes of simulated time and seconds of real time.
 *
 * The driver advances the clock only when the event loop has nothing else to run (two `setImmediate`
 * turns after the last wake-up): every task is then waiting on a simulated sleep, so jumping to the
 * earliest is what real time would do, minus CPU time (reported apart by the scenarios). Real timers
 * of the code under test (optimistic-update's back-off, a few ms on contention) are not simulated: a
 * wait on one lets simulated time run on meanwhile, so contention retries cost no simulated time.
 */
export class VirtualTime implements Clock {
  private t: number;
  private seq = 0;
  /** Wake-ups in time order, ties in the order they were asked for. */
  private readonly sleepers = new BinaryHeap<Sleeper>((a, b) => a.at - b.at || a.seq - b.seq);

  constructor(start: number) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  /** Sleeps `ms` of simulated time, or until `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((wake) => {
      if (signal?.aborted) return wake();
      signal?.addEventListener('abort', () => wake(), { once: true });
      this.sleepers.push({ at: this.t + Math.max(0, ms), seq: this.seq++, wake });
    });
  }

  /** Sleeps until the clock reads `at` (at once when it is past). */
  until(at: number): Promise<void> {
    return this.sleep(at - this.t);
  }

  /** Drives the clock until `work` settles; answers what it answered. */
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    done.catch(() => {});
    while (!settled) {
      await turn();
      await turn();
      if (settled) break;
      const next = this.sleepers.pop();
      if (!next) {
        // Nothing simulated is pending: the work waits on a real timer (a back-off); let it pass.
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      this.t = Math.max(this.t, next.at);
      next.wake();
      // Every sleeper due at the same instant wakes in the same turn.
      while ((this.sleepers.peek()?.at ?? Infinity) <= this.t) this.sleepers.pop()!.wake();
    }
    return done;
  }
}

interface Sleeper {
  at: number;
  seq: number;
  wake: () => void;
}
const turn = () => new Promise<void>((r) => setImmediate(r));
