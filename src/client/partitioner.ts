import { partitionForKey } from '../wire/murmur2.js';
import type { Message } from './codec.js';

/** Picks a partition for a record that names none. */
export type Partitioner = (args: {
  topic: string;
  partitionCount: number;
  key: Buffer | null;
  message: Message;
}) => number;

/**
 * Kafka's default for how many bytes of keyless records go to one partition before the sticky
 * partitioner moves on: its batch.size (16384), which Kafka's BuiltInPartitioner takes as its
 * stickyBatchSize. Here batch.size is far larger (a batch fills a request), so the two are apart.
 */
export const DEFAULT_PARTITIONER_STICKY_BATCH_SIZE = 16_384;

interface Sticky {
  partition: number;
  bytes: number;
  /** Partitions not yet stuck to in the current round. */
  unvisited: number[];
}

/**
 * Kafka's built-in partitioner: murmur2(key) mod partitions for keyed records (the same function
 * the server and every Java producer use, so a key always lands on one partition), and for keyless
 * records the uniform sticky partitioner of KIP-794: stay on one partition until its sticky batch
 * size went to it, then move to another at random, so keyless records fill batches instead of
 * spraying. The sticky batch size is its own setting, not batch.size: batches here grow to a whole
 * request, and switching only then would leave one partition with every keyless record for a
 * megabyte (all of a small topic's records on one partition, one busy consumer of a group). The
 * random choice draws without replacement within a round of the partitions, so every partition is
 * visited once each `partitionCount` switches.
 */
export class DefaultPartitioner {
  private readonly sticky = new Map<string, Sticky>();

  constructor(
    private readonly stickyBatchSize: number,
    private readonly random: () => number = Math.random,
  ) {}

  partition(topic: string, partitionCount: number, key: Buffer | null): number {
    if (key !== null) return partitionForKey(key, partitionCount);
    const s = this.sticky.get(topic);
    if (s && s.partition < partitionCount) return s.partition;
    return this.switch(topic, partitionCount, -1);
  }

  /** Counts bytes added to a keyless record's sticky partition; switches at the sticky batch size. */
  onAppend(topic: string, partition: number, partitionCount: number, bytes: number): void {
    const s = this.sticky.get(topic);
    if (!s || s.partition !== partition) return;
    s.bytes += bytes;
    if (s.bytes >= this.stickyBatchSize) this.switch(topic, partitionCount, partition);
  }

  /** Whether records already went to the topic's sticky partition (since the last switch). */
  stuck(topic: string): boolean {
    return (this.sticky.get(topic)?.bytes ?? 0) > 0;
  }

  /** The sticky partition's batch is full or gone: switch now, before a record starts a new batch there. */
  onNewBatch(topic: string, partitionCount: number, previous: number): number {
    return this.switch(topic, partitionCount, previous);
  }

  private switch(topic: string, partitionCount: number, previous: number): number {
    const s = this.sticky.get(topic);
    let unvisited = s?.unvisited.filter((p) => p < partitionCount && p !== previous) ?? [];
    if (unvisited.length === 0) {
      unvisited = Array.from({ length: partitionCount }, (_, p) => p);
      if (partitionCount > 1 && previous >= 0 && previous < partitionCount) unvisited.splice(previous, 1);
    }
    const i = Math.floor(this.random() * unvisited.length);
    const next = unvisited[i]!;
    unvisited.splice(i, 1);
    this.sticky.set(topic, { partition: next, bytes: 0, unvisited });
    return next;
  }
}
