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
 * Kafka's built-in partitioner: murmur2(key) mod partitions for keyed records (the same function
 * the server and every Java producer use, so a key always lands on one partition), and for keyless
 * records the uniform sticky partitioner of KIP-794: stay on one partition until batch.size bytes
 * went to it, then move to another at random, so keyless records fill batches instead of spraying.
 */
export class DefaultPartitioner {
  private readonly sticky = new Map<string, { partition: number; bytes: number }>();

  constructor(
    private readonly batchSize: number,
    private readonly random: () => number = Math.random,
  ) {}

  partition(topic: string, partitionCount: number, key: Buffer | null): number {
    if (key !== null) return partitionForKey(key, partitionCount);
    const s = this.sticky.get(topic);
    if (s && s.partition < partitionCount) return s.partition;
    return this.switch(topic, partitionCount, -1);
  }

  /** Counts bytes added to a keyless record's sticky partition; switches once a batch is full. */
  onAppend(topic: string, partition: number, partitionCount: number, bytes: number): void {
    const s = this.sticky.get(topic);
    if (!s || s.partition !== partition) return;
    s.bytes += bytes;
    if (s.bytes >= this.batchSize) this.switch(topic, partitionCount, partition);
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
    let next = Math.floor(this.random() * partitionCount);
    if (partitionCount > 1 && next === previous) next = (next + 1) % partitionCount;
    this.sticky.set(topic, { partition: next, bytes: 0 });
    return next;
  }
}
