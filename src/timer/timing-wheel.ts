import { BinaryHeap } from './binary-heap.js';
import { TimerTaskList, type EntryCounter, type TimerTaskEntry } from './timer-task-list.js';

export interface TimingWheelOptions {
  /** Width of one bucket of the lowest level, in ms: the timer's resolution. A positive integer. */
  tickMs: number;
  /** Buckets per level (at least 2). */
  wheelSize: number;
  /** Initial time; truncated down to a multiple of `tickMs`. */
  startMs: number;
}

/** One level: `wheelSize` buckets of `tickMs` each, covering `[currentTimeMs, currentTimeMs + interval)`. */
interface Level<E extends TimerTaskEntry> {
  readonly tickMs: number;
  readonly interval: number;
  currentTimeMs: number;
  readonly buckets: TimerTaskList<E>[];
}

/** A queued bucket with the expiration it had when queued (a mismatch later means the entry is stale). */
interface QueuedBucket<E extends TimerTaskEntry> {
  readonly expirationMs: number;
  readonly bucket: TimerTaskList<E>;
}

/**
 * A hierarchical timing wheel after Apache Kafka's `org.apache.kafka.server.util.timer.TimingWheel`
 * (itself after Varghese and Lauck, "Hashed and hierarchical timing wheels").
 *
 * ## One level
 * A level is a circular array of `wheelSize` buckets, each a doubly linked list of entries
 * (`TimerTaskList`), and spans `interval = tickMs × wheelSize`. Time is cut into ticks; tick number
 * `v = floor(t / tickMs)` (Kafka's "virtual id") covers `[v·tickMs, (v+1)·tickMs)`. An entry expiring
 * at `e` lands in
 *
 *     bucket index = floor(e / tickMs) mod wheelSize,     bucket expiration = floor(e / tickMs) · tickMs
 *
 * provided `currentTime + tickMs <= e < currentTime + interval`. With `currentTime = v·tickMs`, that
 * window is exactly the `wheelSize − 1` whole ticks after the current one, tick numbers `v+1 … v+wheelSize−1`:
 * consecutive integers, hence distinct modulo `wheelSize` and distinct from `v mod wheelSize` (the
 * current tick's bucket, which has just come due). So every bucket holds exactly one tick's entries and
 * never mixes two rounds of the wheel. Adding is one division and one O(1) list append; cancelling is
 * an O(1) unlink, which is why buckets are doubly linked lists rather than arrays.
 *
 * ## Why currentTime is truncated to a tick multiple
 * `currentTime` is always `floor(t / tickMs) · tickMs`, the start of the current tick. Then the test
 * `e < currentTime + tickMs` says precisely "e falls in the current tick (or earlier)": its bucket has
 * come due, so `add` reports it expired (returns false) and the caller runs it. Were `currentTime` an
 * arbitrary `t` inside tick `v`, every boundary would be off by `t mod tickMs`: the expired test would
 * also catch the start of tick `v+1` (entries up to a tick in the future), and the last tick of the
 * window would be split between this level and the overflow wheel. Overflow levels truncate to their own
 * (coarser) tick for the same reason, which also makes each of their buckets span exactly one whole
 * interval of the level below, the property the cascade relies on. Precision is therefore one tick: a
 * bucket comes due at the start of its tick (the system timer then fires each entry at its exact
 * expiration).
 *
 * ## Overflow wheels
 * An entry with `e >= currentTime + interval` goes to the overflow wheel, created on demand, whose
 * `tickMs` is this level's `interval` (so level k has tick `tickMs · wheelSize^k` and interval
 * `tickMs · wheelSize^(k+1)`); the same rule then applies one level up, recursively, so any finite
 * expiration fits after `O(log_wheelSize(delay / tickMs))` levels. Each level's `currentTime` is the
 * root's time truncated to that level's tick.
 *
 * ## Why an overflow bucket's entries are re-inserted
 * A level-k bucket spans one level-k tick, i.e. a whole level-(k-1) interval, so when it comes due at
 * its expiration `b` its entries still expire anywhere in `[b, b + tick_k)`: running them would fire
 * them up to `tick_k` early. Instead the clock advances to `b` (aligned on every lower level, since
 * `tick_k` is a multiple of every lower tick) and each entry is added again: level k-1 now covers
 * exactly `[b, b + interval_(k-1)) = [b, b + tick_k)`, so the entry falls into a finer bucket of level
 * k-1 (or lower), and finally into a level-0 bucket, which on coming due hands it to the caller. That
 * cascade costs each entry at most one re-insertion per level.
 *
 * ## Driving it
 * Kafka puts every non-empty bucket in a `DelayQueue` shared by all levels. JavaScript has none, so the
 * wheel keeps a binary heap of bucket expirations (a bucket is pushed when its expiration changes, i.e.
 * when it starts a new round; emptied buckets are dropped lazily): `nextExpiration()` is O(1) amortised
 * and coming due is O(log buckets), never O(wheelSize). `advanceClock(t, onExpired)` pops due buckets in
 * expiration order, advancing the clock to each bucket's expiration before flushing and re-inserting its
 * entries, then moves the clock to `t`; entries that are expired at that point are handed to
 * `onExpired` (in bucket order; their exact order within one tick is the caller's to choose).
 */
export class TimingWheel<E extends TimerTaskEntry = TimerTaskEntry> {
  readonly tickMs: number;
  readonly wheelSize: number;
  /** Span of the lowest level: `tickMs × wheelSize`. */
  readonly interval: number;
  private readonly levels: Level<E>[] = [];
  private readonly queue = new BinaryHeap<QueuedBucket<E>>((a, b) => a.expirationMs - b.expirationMs);
  private readonly counter: EntryCounter = { value: 0 };

  constructor(options: TimingWheelOptions) {
    const { tickMs, wheelSize, startMs } = options;
    if (!Number.isSafeInteger(tickMs) || tickMs < 1)
      throw new RangeError(`tickMs must be a positive integer, got ${tickMs}`);
    if (!Number.isSafeInteger(wheelSize) || wheelSize < 2) {
      throw new RangeError(`wheelSize must be an integer >= 2, got ${wheelSize}`);
    }
    if (!Number.isFinite(startMs)) throw new RangeError(`startMs must be finite, got ${startMs}`);
    this.tickMs = tickMs;
    this.wheelSize = wheelSize;
    this.interval = tickMs * wheelSize;
    this.levels.push(this.newLevel(tickMs, startMs));
  }

  /** Start of the current tick of the lowest level. */
  get currentTimeMs(): number {
    return this.levels[0]!.currentTimeMs;
  }

  /** Entries held in buckets, over all levels. */
  get size(): number {
    return this.counter.value;
  }

  /** Levels created so far (1 + overflow wheels). */
  get levelCount(): number {
    return this.levels.length;
  }

  /**
   * Puts `entry` in the bucket of its expiration, at the lowest level whose window holds it. Returns
   * false, holding nothing, when the entry is cancelled or already expired
   * (`expirationMs < currentTimeMs + tickMs`): the caller should then run it now.
   */
  add(entry: E): boolean {
    if (entry.cancelled) return false;
    const e = entry.expirationMs;
    if (!Number.isFinite(e)) throw new RangeError(`expirationMs must be finite, got ${e}`);
    const root = this.levels[0]!;
    if (e < root.currentTimeMs + root.tickMs) return false;
    for (let k = 0; ; k++) {
      const level = this.levels[k] ?? this.addOverflowLevel();
      if (e < level.currentTimeMs + level.interval) {
        const virtualId = Math.floor(e / level.tickMs);
        const bucket = level.buckets[mod(virtualId, this.wheelSize)]!;
        bucket.add(entry);
        // A changed expiration means the bucket starts a new round: (re-)queue it.
        if (bucket.setExpiration(virtualId * level.tickMs)) {
          this.queue.push({ expirationMs: bucket.expirationMs, bucket });
        }
        return true;
      }
    }
  }

  /** Expiration of the earliest non-empty bucket (any level), or undefined when no entry is held. */
  nextExpiration(): number | undefined {
    return this.peekBucket()?.expirationMs;
  }

  /**
   * Advances the clock to `timeMs` (truncated to a tick multiple; never backwards), first coming due,
   * in expiration order, every bucket expiring at or before `timeMs`: overflow buckets cascade their
   * entries down a level, and entries that have expired are passed to `onExpired` (cancelled ones are
   * dropped).
   */
  advanceClock(timeMs: number, onExpired: (entry: E) => void): void {
    for (let q = this.peekBucket(); q !== undefined && q.expirationMs <= timeMs; q = this.peekBucket()) {
      this.queue.pop();
      this.moveTime(q.expirationMs);
      for (const entry of q.bucket.flush()) {
        if (!this.add(entry) && !entry.cancelled) onExpired(entry);
      }
    }
    this.moveTime(timeMs);
  }

  /** The earliest queued bucket that is current and non-empty; stale and emptied ones are dropped. */
  private peekBucket(): QueuedBucket<E> | undefined {
    for (let q = this.queue.peek(); q !== undefined; q = this.queue.peek()) {
      if (q.bucket.expirationMs !== q.expirationMs) {
        this.queue.pop(); // stale: the bucket was flushed (or re-queued) since
      } else if (q.bucket.isEmpty) {
        this.queue.pop(); // every entry was cancelled: forget the round so the bucket can be re-queued
        q.bucket.setExpiration(-1);
      } else {
        return q;
      }
    }
    return undefined;
  }

  private moveTime(timeMs: number): void {
    for (const level of this.levels) {
      if (timeMs >= level.currentTimeMs + level.tickMs) level.currentTimeMs = truncate(timeMs, level.tickMs);
    }
  }

  private addOverflowLevel(): Level<E> {
    const below = this.levels[this.levels.length - 1]!;
    const level = this.newLevel(below.interval, below.currentTimeMs);
    this.levels.push(level);
    return level;
  }

  private newLevel(tickMs: number, startMs: number): Level<E> {
    const buckets: TimerTaskList<E>[] = [];
    for (let i = 0; i < this.wheelSize; i++) buckets.push(new TimerTaskList<E>(this.counter));
    return { tickMs, interval: tickMs * this.wheelSize, currentTimeMs: truncate(startMs, tickMs), buckets };
  }
}

const truncate = (timeMs: number, tickMs: number): number => Math.floor(timeMs / tickMs) * tickMs;

const mod = (n: number, m: number): number => ((n % m) + m) % m;
