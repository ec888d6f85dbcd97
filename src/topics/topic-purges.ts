/**
 * Deleted topics whose data is still to be removed: Kafka's "marked for deletion". A delete
 * records the topic here (by id) before it writes the tombstone, and answers at once; the
 * scheduler's background work (src/maintenance/topic-purge.ts) removes the partitions' items and
 * the objects, over as many runs as it takes, and then this record. Recorded first, so no
 * tombstone exists without its record, whatever dies when; a record whose topic is still live
 * (the delete died before its tombstone) is left alone, and taken up again if the topic is deleted.
 */
import { CLUSTER_PK, TOPIC_PURGE_PREFIX, topicPurgeSk } from '../storage/key-layout.js';
import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';

export interface TopicPurge {
  id: string;
  name: string;
  partitionCount: number;
  /** The topic's commit log layout (TopicMeta.shardGroups), so the purge finds every shard. */
  shardGroups?: number;
  deletedAt: number;
  /** Partitions below this are purged already (the objects are left once it reaches the count). */
  nextPartition: number;
}

/** Records a topic to purge (idempotent: the same topic id is one record). */
export async function recordTopicPurge(metadata: MetadataStore, purge: Omit<TopicPurge, 'nextPartition'>) {
  await metadata.put<TopicPurge>(CLUSTER_PK, topicPurgeSk(purge.id), { ...purge, nextPartition: 0 });
}

/** Every topic still to purge. */
export function pendingTopicPurges(metadata: MetadataStore): Promise<MetaItem<TopicPurge>[]> {
  return metadata.query<TopicPurge>(CLUSTER_PK, { beginsWith: TOPIC_PURGE_PREFIX });
}

/** Notes how far a purge went (nothing when the record changed since it was read: the next run reads it again). */
export async function notePurgeProgress(
  metadata: MetadataStore,
  item: MetaItem<TopicPurge>,
  nextPartition: number,
): Promise<void> {
  await metadata
    .put<TopicPurge>(item.pk, item.sk, { ...item.value, nextPartition }, { ifVersion: item.version })
    .catch(ignoreConditionFailed);
}

/** Removes a finished purge's record. */
export async function removeTopicPurge(metadata: MetadataStore, item: MetaItem<TopicPurge>): Promise<void> {
  await metadata.delete(item.pk, item.sk, { ifVersion: item.version }).catch(ignoreConditionFailed);
}

function ignoreConditionFailed(e: unknown): void {
  if (!(e instanceof ConditionFailedError)) throw e;
}
