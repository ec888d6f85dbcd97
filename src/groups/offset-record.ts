/** An offset item (pk `group#{id}`, sk `off#{topic}#{p}`). */
export interface OffsetRecord {
  topic: string;
  partition: number;
  /** The topic incarnation: offsets of a deleted topic are ignored by a re-created one. */
  topicId: string;
  /**
   * The next offset to consume, as Kafka commits it. Stored as committed, negative ones too (as
   * Kafka's coordinator does): clients commit -1 (latest) or -2 (earliest) after a reset, and read
   * them back as "no position", so auto.offset.reset decides (see `hasPosition`).
   */
  offset: number;
  metadata: string;
  /** The committer's member epoch (generation); -1 for an admin commit. */
  generation: number;
  commitTimestamp: number;
  /** The group item version from which on only the partition's current holder may commit (offset-fence.ts). */
  fence?: number;
  /** The id of the commit request that wrote it: a retried write that applied recognises itself. */
  commitId?: string;
}

/** Whether a committed offset is a position to resume from; a negative one is none, as consumers read it. */
export const hasPosition = (r: OffsetRecord | undefined): r is OffsetRecord => r !== undefined && r.offset >= 0;
