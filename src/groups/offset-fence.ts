import { optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';
import type { TopicPartition } from './assignment.js';
import { groupPk, offsetSk } from '../storage/key-layout.js';
import type { OffsetRecord } from './offset-record.js';

/**
 * Offset commits fenced by the group item they were validated against, without a transaction.
 * The offset item and the group item are two items: a commit validated against the group ("this
 * member holds p at this epoch") and written afterwards must not land once the member lost p.
 *
 *  - The coordinator, before a group write (to version V+1) that takes p away from a member, raises
 *    the `fence` of p's offset item to V+1 (a conditional write; it creates a placeholder item, with
 *    no offset, when none exists).
 *  - A commit reads the offset item first (version v, fence f), then the group (version G), and
 *    accepts only if the member holds p in that group read and f <= G; it writes IF version = v.
 *
 * Why it holds: let the write taking p away be version W, fenced at time t1 before it lands at t2.
 * A commit that saw the member holding p read the group before t2, so G < W. If it read the offset
 * item after t1 it saw f >= W > G and refuses; if before t1, its version predates the fence and its
 * write fails unless it landed before t1, while the member still held p. A lost race (failed
 * condition) re-reads the group after the item, so the same argument applies to each attempt.
 * A fence whose group write never landed (its writer crashed) stays above G until the next group
 * write; a commit meeting it writes the group item unchanged to move past it (see GroupOffsets).
 */
export async function fenceOffsets(
  metadata: MetadataStore,
  groupId: string,
  partitions: TopicPartition[],
  fence: number,
): Promise<void> {
  const queue = [...partitions];
  const fenceNext = async (): Promise<void> => {
    for (let p = queue.shift(); p; p = queue.shift()) await fenceOne(metadata, groupId, p, fence);
  };
  await Promise.all(Array.from({ length: Math.min(FENCE_CONCURRENCY, queue.length) }, fenceNext));
}

/**
 * How many fences one group write raises at once. The offset items share the group's partition
 * key, which DynamoDB holds to 1,000 write units a second: a member releasing a thousand partitions
 * at once (the first member of a group that grows to a thousand) would spend all of it in a few
 * milliseconds and throttle every heartbeat and commit of the group. Two at a time keep it near
 * 400 a second at 5 ms a write (`npm run bench:scale -- --scenario group-heartbeats`), and cost a
 * release of one or two partitions nothing; such a large release takes a few seconds.
 */
export const FENCE_CONCURRENCY = 2;

function fenceOne(metadata: MetadataStore, groupId: string, { topic, partition }: TopicPartition, fence: number) {
  return optimisticUpdate<OffsetRecord, undefined>({
    metadata,
    pk: groupPk(groupId),
    sk: offsetSk(topic, partition),
    giveUp: {
      errorName: 'COORDINATOR_NOT_AVAILABLE',
      message: `Too many concurrent commits to ${topic}-${partition} of group ${groupId}; retry`,
    },
    // Idempotent: a repeat (or a lost race) finds the fence raised and does nothing.
    decide: (item) => {
      if ((item?.value.fence ?? 0) >= fence) return { done: undefined };
      return { write: { ...(item?.value ?? placeholder(topic, partition)), fence }, answer: () => undefined };
    },
  });
}

/** An offset item that holds only a fence: no topic incarnation, so every reader skips it. */
const placeholder = (topic: string, partition: number): OffsetRecord => ({
  topic,
  partition,
  topicId: '',
  offset: -1,
  metadata: '',
  generation: -1,
  commitTimestamp: 0,
});
