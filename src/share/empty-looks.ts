/**
 * What this process's receives last found at share-partitions that had nothing to take, so that
 * the next receives pass them by without reading the item and the partition's state. Under many
 * receivers most visits found nothing (every record delivered and waiting for its
 * acknowledgement, the receivers long-polling): two storage reads each, for nothing.
 *
 * A share-partition found with nothing to take can only get something by: an append to its
 * partition, a lock that ends, a write that frees records (a release, an acknowledgement that
 * makes room, an offset change) or a config change. This process hears of its own appends and
 * writes (`changed`, `forgetGroup`), and the lock ends are in the item it read; another process's
 * appends and writes it does not hear of, so nothing found is trusted for longer than
 * SHARE_EMPTY_SKIP_MS: a skipped look delays what another process did by at most that long, and
 * never loses it (the memory is only ever a reason to read later, never a state).
 */

/** How long a look that found nothing is trusted against other processes' appends and writes. */
export const SHARE_EMPTY_SKIP_MS = 250;
/**
 * How long a share-partition where a look found nothing is visited after the others once it is
 * looked at again (see `ShareGroups.acquire`).
 */
export const SHARE_EMPTY_HINT_MS = 1000;
/** Bound on the topic-partitions remembered (past it the memory starts afresh: it only saves reads). */
const PARTITIONS = 4096;

/** Taken before a look reads anything: what it finds is kept only if nothing changed meanwhile. */
export interface Look {
  epoch: number;
  change: number;
}

interface Found {
  /** When the look found nothing. */
  at: number;
  /** Until when it is passed by: SHARE_EMPTY_SKIP_MS after, or the first lock's end if sooner. */
  until: number;
}

export class EmptyLooks {
  /** By topic-partition, by group. */
  private readonly found = new Map<string, Map<string, Found>>();
  /** By topic-partition: changes heard of, so that a look under way across one keeps nothing. */
  private readonly changes = new Map<string, number>();
  /** Moves when the memory starts afresh (the counts above are lost with it). */
  private epoch = 0;

  constructor(private readonly now: () => number) {}

  begin(topic: string, partition: number): Look {
    return { epoch: this.epoch, change: this.changes.get(key(topic, partition)) ?? 0 };
  }

  /**
   * The look found nothing to take, and nothing can come there before `lockEnd` (the first lock
   * of the item it read to end) but by a change this process hears of or another process makes.
   */
  nothing(group: string, topic: string, partition: number, look: Look, lockEnd: number): void {
    const k = key(topic, partition);
    if (look.epoch !== this.epoch || look.change !== (this.changes.get(k) ?? 0)) return;
    let groups = this.found.get(k);
    if (!groups) {
      if (this.found.size >= PARTITIONS) this.afresh();
      this.found.set(k, (groups = new Map()));
    }
    const now = this.now();
    groups.set(group, { at: now, until: Math.min(lockEnd, now + SHARE_EMPTY_SKIP_MS) });
  }

  /** Whether a look there now can only find nothing (as far as this process can tell for a while). */
  skip(group: string, topic: string, partition: number): boolean {
    return (this.found.get(key(topic, partition))?.get(group)?.until ?? 0) > this.now();
  }

  /** Whether a look found nothing there lately: visited after the others. */
  seemsEmpty(group: string, topic: string, partition: number, now: number): boolean {
    const at = this.found.get(key(topic, partition))?.get(group)?.at;
    return at !== undefined && at + SHARE_EMPTY_HINT_MS > now;
  }

  /** A look took records there (or wrote): not visited after the others. */
  took(group: string, topic: string, partition: number): void {
    this.found.get(key(topic, partition))?.delete(group);
  }

  /** Records may have come to the share-partition: appended (every group's), or freed (`group`'s). */
  changed(topic: string, partition: number, group?: string): void {
    const k = key(topic, partition);
    if (this.changes.size >= PARTITIONS) this.afresh();
    this.changes.set(k, (this.changes.get(k) ?? 0) + 1);
    if (group === undefined) this.found.delete(k);
    else this.found.get(k)?.delete(group);
  }

  /** Everything of a group may have changed (its configs): nothing found is trusted. */
  forgetGroup(group: string): void {
    for (const groups of this.found.values()) groups.delete(group);
    this.epoch++;
  }

  private afresh(): void {
    this.found.clear();
    this.changes.clear();
    this.epoch++;
  }
}

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;
