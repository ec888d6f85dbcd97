/**
 * The scheduler's purge of deleted topics (Kafka deletes a topic's logs in the background after
 * the controller marked it for deletion): for each recorded purge (src/topics/topic-purges.ts)
 * whose topic is gone, the partitions' items and then the objects are removed, until the run's
 * deadline. Progress is noted on the record, and every step is idempotent, so a purge interrupted
 * at any step (a fault, a run that dies or reaches its deadline) goes on at the next run.
 */
import type { Logger } from '../metrics.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { notePurgeProgress, pendingTopicPurges, removeTopicPurge, type TopicPurge } from '../topics/topic-purges.js';
import { isCurrentTopic } from '../topics/topics.js';

export interface TopicPurgeDeps {
  metadata: MetadataStore;
  partitionLog: PartitionLog;
  /** True once the run should start no new step. */
  pastDeadline: () => boolean;
  add: (name: string, n: number) => void;
  logger: Logger;
}

/** Works through the recorded purges; false when the deadline stopped it before the last was done. */
export async function purgeDeletedTopics(deps: TopicPurgeDeps): Promise<boolean> {
  const { metadata } = deps;
  let pending: MetaItem<TopicPurge>[];
  try {
    pending = await pendingTopicPurges(metadata);
  } catch (e) {
    failed(deps, undefined, e);
    return true; // the maintenance units go on; the next run lists again
  }
  for (const item of pending) {
    if (deps.pastDeadline()) return false;
    const purge = item.value;
    try {
      // The delete died before its tombstone: the topic is live, nothing to purge (yet).
      if (await isCurrentTopic(metadata, { id: purge.id, name: purge.name })) continue;
      const progress = await deps.partitionLog.purge(purge, { from: purge.nextPartition, stop: deps.pastDeadline });
      if (!progress.done) {
        if (progress.nextPartition > purge.nextPartition)
          await notePurgeProgress(metadata, item, progress.nextPartition);
        return false;
      }
      await removeTopicPurge(metadata, item);
      deps.add('topicsPurged', 1);
      deps.logger.info('topic purged', { topic: purge.name, topicId: purge.id });
    } catch (e) {
      // The record stays: the next run goes on from its noted progress.
      failed(deps, purge, e);
    }
  }
  return true;
}

function failed(deps: TopicPurgeDeps, purge: TopicPurge | undefined, e: unknown): void {
  deps.add('purgeFailures', 1);
  deps.logger.error('topic purge failed; retried next run', {
    ...(purge ? { topic: purge.name, topicId: purge.id } : {}),
    error: e instanceof Error ? e.message : String(e),
  });
}
