/**
 * A timing-wheel bucket: a circular doubly linked list with a sentinel (Kafka's `TimerTaskList`), so
 * both adding an entry and removing one (cancellation) are O(1) and need no search.
 */

/** A node of a bucket. Subclass it (the system timer does) to carry what should run at expiry. */
export class TimerTaskEntry {
  /** The bucket currently holding this entry, if any. Managed by `TimerTaskList`. */
  list: TimerTaskList | undefined = undefined;
  next: TimerTaskEntry | undefined = undefined;
  prev: TimerTaskEntry | undefined = undefined;

  /** Absolute time (same clock as the wheel's `currentTimeMs`) at which the entry expires. */
  constructor(readonly expirationMs: number) {}

  /** A cancelled entry is refused by `TimingWheel.add` and dropped when its bucket is flushed. */
  get cancelled(): boolean {
    return false;
  }

  /** Unlinks the entry from whichever bucket holds it (O(1)); a no-op when it is in none. */
  remove(): void {
    this.list?.remove(this);
  }
}

/** Counts entries across every bucket of every level of one wheel, as Kafka's shared `taskCounter`. */
export interface EntryCounter {
  value: number;
}

export class TimerTaskList<E extends TimerTaskEntry = TimerTaskEntry> {
  private readonly root = new TimerTaskEntry(Number.NaN);
  private expiration = -1;
  private count = 0;

  constructor(private readonly counter: EntryCounter) {
    this.root.next = this.root;
    this.root.prev = this.root;
  }

  /** The bucket's expiration (start of the time range it covers), or -1 when it is not in use. */
  get expirationMs(): number {
    return this.expiration;
  }

  /** Sets the expiration; true when it changed, i.e. the bucket must be (re-)queued by expiration. */
  setExpiration(expirationMs: number): boolean {
    const changed = this.expiration !== expirationMs;
    this.expiration = expirationMs;
    return changed;
  }

  get size(): number {
    return this.count;
  }

  get isEmpty(): boolean {
    return this.count === 0;
  }

  /** Appends `entry`, first unlinking it from any bucket that holds it. */
  add(entry: E): void {
    entry.remove();
    const tail = this.root.prev!;
    entry.next = this.root;
    entry.prev = tail;
    tail.next = entry;
    this.root.prev = entry;
    entry.list = this;
    this.count++;
    this.counter.value++;
  }

  remove(entry: TimerTaskEntry): void {
    if (entry.list !== this) return;
    entry.prev!.next = entry.next;
    entry.next!.prev = entry.prev;
    entry.next = undefined;
    entry.prev = undefined;
    entry.list = undefined;
    this.count--;
    this.counter.value--;
  }

  /** Removes every entry and returns them in insertion order; the bucket's expiration resets to -1. */
  flush(): E[] {
    const out: E[] = [];
    for (let e = this.root.next!; e !== this.root; ) {
      const next = e.next!;
      this.remove(e);
      out.push(e as E);
      e = next;
    }
    this.expiration = -1;
    return out;
  }

  *[Symbol.iterator](): IterableIterator<E> {
    for (let e = this.root.next!; e !== this.root; e = e.next!) yield e as E;
  }
}
