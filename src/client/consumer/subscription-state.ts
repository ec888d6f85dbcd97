import type { ConsumerRecord } from '../codec.js';

export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  /** The next offset to consume (what Kafka commits). */
  offset: number;
  metadata?: string;
}

export const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** A completed fetch waiting to be handed out by poll(). */
export interface BufferedFetch {
  /** The answer's records, decoded (and checked) when drain() first reaches them. */
  decode: () => ConsumerRecord[];
  records: ConsumerRecord[] | undefined;
  index: number;
  nextOffset: number;
  /** The partition's epoch when the fetch started: a seek in between makes it stale. */
  epoch: number;
}

/** What the consumer knows about one assigned partition (Kafka's TopicPartitionState). */
export class TopicPartitionState {
  /** The next offset poll() hands out; undefined until it is initialised (committed or reset). */
  position: number | undefined;
  /** Set when the position must be (re)initialised: from the committed offset, or by a reset policy. */
  reset: 'committed' | 'earliest' | 'latest' | undefined = 'committed';
  paused = false;
  /** Bumped by every seek, revocation or reset: fetches started before are dropped. */
  epoch = 0;
  buffered: BufferedFetch | undefined;
  /**
   * The answer after `buffered`, fetched while the application works through it (from its
   * nextOffset): one answer in hand and one in flight per partition, so that the server reads the
   * next while the client decodes and hands out this one.
   */
  prefetched: BufferedFetch | undefined;
  fetching = false;
  /**
   * Set when a push notification told of readable records up to here (exclusive) that the fetch
   * in flight may have missed: its answer is followed by another fetch unless it reached them.
   */
  pushedEnd: number | undefined;
  /** Earliest time of the next fetch (back-off after an empty answer or an error). */
  nextFetchAt = 0;
  highWatermark: number | undefined;
  logStartOffset: number | undefined;
  /** The last offset committed for it by this consumer. */
  committed: number | undefined;

  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {}

  seek(offset: number): void {
    this.position = offset;
    this.reset = undefined;
    this.buffered = this.prefetched = undefined;
    this.epoch++;
  }

  requestReset(how: TopicPartitionState['reset']): void {
    this.reset = how;
    this.buffered = this.prefetched = undefined;
    this.epoch++;
  }

  /** Where the next fetch starts: after the buffered answer, else at the position. */
  get fetchOffset(): number | undefined {
    const b = this.buffered;
    return b !== undefined && b.epoch === this.epoch ? b.nextOffset : this.position;
  }

  get fetchable(): boolean {
    return (
      !this.paused &&
      this.position !== undefined &&
      this.reset === undefined &&
      !this.fetching &&
      this.prefetched === undefined
    );
  }
}

/** The consumer's assigned partitions, in assignment order. */
export class SubscriptionState {
  readonly partitions = new Map<string, TopicPartitionState>();
  /**
   * Told of every partition that stops being assigned (revoked or lost in a rebalance, left out of
   * an assign(), the consumer closing): the push channel disarms it (idle-backoff.ts).
   */
  onRemoved: ((s: TopicPartitionState) => void) | undefined;

  get(topic: string, partition: number): TopicPartitionState | undefined {
    return this.partitions.get(tpKey(topic, partition));
  }

  require(topic: string, partition: number): TopicPartitionState {
    const s = this.get(topic, partition);
    if (!s) throw new Error(`${topic}-${partition} is not assigned to this consumer`);
    return s;
  }

  add(tp: TopicPartition): TopicPartitionState {
    let s = this.get(tp.topic, tp.partition);
    if (!s) this.partitions.set(tpKey(tp.topic, tp.partition), (s = new TopicPartitionState(tp.topic, tp.partition)));
    return s;
  }

  remove(tp: TopicPartition): void {
    const s = this.get(tp.topic, tp.partition);
    if (s) {
      s.epoch++;
      this.partitions.delete(tpKey(tp.topic, tp.partition));
      this.onRemoved?.(s);
    }
  }

  list(): TopicPartition[] {
    return [...this.partitions.values()].map((s) => ({ topic: s.topic, partition: s.partition }));
  }

  states(): TopicPartitionState[] {
    return [...this.partitions.values()];
  }
}
