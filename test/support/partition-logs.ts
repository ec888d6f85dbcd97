/** A PartitionLog over given stores, as the log and partition tests build it, a record to append, and a topic with a commit log. */
import { PartitionLog } from '../../src/log/partition-log.js';
import type { Metrics } from '../../src/metrics.js';
import { ReplicaManager } from '../../src/replication/replica-manager.js';
import { COMMIT_LOG_LEVEL } from '../../src/storage/formats.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import { TopicRegistry } from '../../src/topics/topics.js';
import type { LogRecord } from '../../src/wire/record-batch.js';

export const clock = { now: () => Date.now() };

export const rec = (value: string): LogRecord => ({
  key: null,
  value: Buffer.from(value),
  headers: [],
  timestamp: Date.now(),
});

export const newLog = (metadata: MetadataStore, stores: ObjectStore[], metrics?: Metrics) =>
  new PartitionLog({
    metadata,
    stores,
    clock,
    leadership: new ReplicaManager({ metadata, stores, clock }),
    ...(metrics ? { metrics } : {}),
  });

/**
 * A topic of `partitionCount` partitions created at `level` (COMMIT_LOG_LEVEL unless told): it
 * commits through its shards' logs (from LEADER_SHARDS_LEVEL, shards by first leader).
 */
export async function clogTopic(
  metadata: MetadataStore,
  stores: ObjectStore[],
  partitionCount: number,
  level = COMMIT_LOG_LEVEL,
) {
  const topics = new TopicRegistry(metadata, clock, stores.length, { featureLevel: async () => level });
  const topic = await topics.create({
    name: `t${Math.random().toString(36).slice(2)}`,
    partitionCount,
    replicationFactor: 1,
  });
  if (!topic.clog) throw new Error('the topic was created without a commit log');
  return topic;
}
