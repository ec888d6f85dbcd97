/**
 * Ordering KEY: one partition's records spread over `lanes` lanes by key (murmur2, as a producer
 * places keys on partitions), each lane with one invocation in flight, so a key's records are
 * invoked in order while the lanes run at once. A keyless record has no order to keep: it goes to
 * the lane of its offset.
 *
 * The partition's committed offset must never pass a record that is not done (succeeded, filtered
 * or given up on), however far other lanes got: `commitPoint` is the lowest offset not yet done.
 * A lane short of a full batch waits, as one partition's batch does, for the batching window from
 * when its first record was read (Lambda's MaximumBatchingWindowInSeconds); a full one goes at once.
 *
 * This is the bookkeeping only; the run that holds the partition's lease drives it
 * (partition-delivery.ts).
 */
import { partitionForKey } from '../wire/murmur2.js';
import type { DecodedRecord } from '../wire/record-batch.js';

interface Lane {
  queue: DecodedRecord[];
  /** When each queued record was read (epoch ms), as `queue`: its batching window starts there. */
  readAt: number[];
  busy: boolean;
  /** Not started again before this (epoch ms): a back-off after a partial batch response. */
  notBefore: number;
  /** Failed invocations so far of the batch starting at `at` (partial batch responses carry them on). */
  carried: { at: number; failures: number };
}

export class KeyLanes {
  private readonly lanes: Lane[];
  /** Offsets handed to a lane and not done yet. */
  private readonly undone = new Set<number>();
  /** Every offset below it is done. */
  private low: number;
  /** Everything below it was read (handed to a lane, or needed no delivery). */
  private next: number;

  constructor(
    lanes: number,
    private readonly batchSize: number,
    from: number,
    private readonly windowMs = 0,
  ) {
    this.lanes = Array.from({ length: lanes }, () => ({
      queue: [],
      readAt: [],
      busy: false,
      notBefore: 0,
      carried: { at: -1, failures: 0 },
    }));
    this.low = from;
    this.next = from;
  }

  /** Where the next read starts. */
  get readFrom(): number {
    return this.next;
  }

  /** Records queued or in flight: reads stop while a batch's worth waits for every lane. */
  get pending(): number {
    return this.undone.size;
  }

  get inFlight(): number {
    return this.lanes.filter((l) => l.busy).length;
  }

  /** A read's records to deliver (the filtered ones left out: done as read), where the read ended, and when. */
  add(records: DecodedRecord[], next: number, now = 0): void {
    for (const r of records) {
      if (r.offset < this.next) continue;
      const lane = this.lanes[this.laneOf(r)]!;
      lane.queue.push(r);
      lane.readAt.push(now);
      this.undone.add(r.offset);
    }
    this.next = Math.max(this.next, next);
  }

  /** Each idle lane's next batch (its lane is busy until `finished`), with its failures so far. */
  start(now: number): { lane: number; records: DecodedRecord[]; failures: number }[] {
    const started: { lane: number; records: DecodedRecord[]; failures: number }[] = [];
    this.lanes.forEach((l, lane) => {
      if (l.busy || l.queue.length === 0 || this.readyAt(l) > now) return;
      l.busy = true;
      const records = l.queue.slice(0, this.batchSize);
      started.push({ lane, records, failures: l.carried.at === records[0]!.offset ? l.carried.failures : 0 });
    });
    return started;
  }

  /**
   * A lane's batch ended: its records below `doneBelow` are done (succeeded or given up on); the
   * rest stay queued, first, for the lane's next batch. `retryFrom` (a partial batch response)
   * carries the failures on to the batch that starts there, not before `notBefore`.
   */
  finished(
    lane: number,
    sent: DecodedRecord[],
    doneBelow: number,
    retry?: { from: number; failures: number; notBefore: number },
  ): void {
    const l = this.lanes[lane]!;
    l.busy = false;
    let done = 0;
    while (done < sent.length && sent[done]!.offset < doneBelow) this.undone.delete(sent[done++]!.offset);
    l.queue.splice(0, done);
    l.readAt.splice(0, done);
    if (retry) {
      l.carried = { at: retry.from, failures: retry.failures };
      l.notBefore = retry.notBefore;
    }
  }

  /** A lane's batch stopped (the run is stopping): its records stay undone. */
  abandoned(lane: number): void {
    this.lanes[lane]!.busy = false;
  }

  /** The lowest offset not done: the partition's committed offset may move up to it, no further. */
  commitPoint(): number {
    while (this.low < this.next && !this.undone.has(this.low)) this.low++;
    return this.low;
  }

  /** When the earliest idle lane with records may start (its back-off or its window over), if one waits. */
  nextStart(): number | undefined {
    let at: number | undefined;
    for (const l of this.lanes)
      if (!l.busy && l.queue.length > 0) at = Math.min(at ?? Number.POSITIVE_INFINITY, this.readyAt(l));
    return at;
  }

  /** After its back-off and, short of a full batch, once its first record has waited the window. */
  private readyAt(l: Lane): number {
    return l.queue.length >= this.batchSize ? l.notBefore : Math.max(l.notBefore, l.readAt[0]! + this.windowMs);
  }

  private laneOf(r: DecodedRecord): number {
    return r.key === null ? r.offset % this.lanes.length : partitionForKey(r.key, this.lanes.length);
  }
}
