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

/**
 * How long a committed offset's `commitTimestamp` may lag a re-commit of the same value: within it
 * the item is not written again. Kafka writes every commit and counts its offsets' retention from
 * the last one; here a commit of what is held (a consumer's auto-commit of a partition with
 * nothing new, a retry of a commit that was cut off by its request's timeout part way, a
 * transaction's end retried) costs a read, not a write, and `commit_timestamp` is refreshed at
 * most this long after the last write. No retention reads it yet: one that does must count from it
 * plus this.
 */
export const OFFSET_REFRESH_MS = 60_000;

/**
 * Whether `held` already holds what `next` would write: the same value (topic incarnation,
 * offset, metadata, generation), from the same commit (an earlier try of it: a lost race's retry,
 * a transaction's end retried) or from one less than OFFSET_REFRESH_MS before it.
 */
export function holdsCommit(held: OffsetRecord | undefined, next: OffsetRecord): boolean {
  return (
    held !== undefined &&
    held.topicId === next.topicId &&
    held.offset === next.offset &&
    held.metadata === next.metadata &&
    held.generation === next.generation &&
    ((next.commitId !== undefined && held.commitId === next.commitId) ||
      next.commitTimestamp - held.commitTimestamp < OFFSET_REFRESH_MS)
  );
}
