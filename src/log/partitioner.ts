import { partitionForKey } from '../wire/murmur2.js';

/**
 * Kafka's default partitioning: an explicit partition wins; else a keyed record goes to
 * murmur2(key) mod partitions (the same partition a Java producer picks); else keyless records are
 * sticky: every keyless record of one request goes to one partition, and the next request moves on
 * round-robin (the request plays the role of the producer's batch in KIP-480).
 */
export class Partitioner {
  private readonly next = new Map<string, number>();

  /** Returns a chooser for one request: the sticky partition is fixed for the request's lifetime. */
  forRequest(topic: string, partitionCount: number): (key: Uint8Array | null, explicit?: number) => number {
    let sticky: number | undefined;
    return (key, explicit) => {
      if (explicit !== undefined) return explicit;
      if (key !== null) return partitionForKey(key, partitionCount);
      if (sticky === undefined) {
        const n = this.next.get(topic) ?? Math.floor(Math.random() * partitionCount);
        sticky = n % partitionCount;
        this.next.set(topic, sticky + 1);
      }
      return sticky;
    };
  }
}
