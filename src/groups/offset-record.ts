/** An offset item (pk `group#{id}`, sk `off#{topic}#{p}`). */
export interface OffsetRecord {
  topic: string;
  partition: number;
  /** The topic incarnation: offsets of a deleted topic are ignored by a re-created one. */
  topicId: string;
  /** The next offset to consume, as Kafka commits it. */
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
