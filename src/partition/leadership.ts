import type { TopicMeta } from '../topics/topics.js';
import type { CommitRecord, PartitionState } from './partition-state.js';

/** What one catch-up pass over a partition's replicas did. */
export interface SyncReport {
  copiedObjects: number;
  caughtUp: number[];
  removedFromIsr: number[];
  addedToIsr: number[];
  elected?: number;
}

/**
 * The narrow view of replication the log appends through: elect a leader when the leader's store
 * is down, copy a commit to followers (acks=1), and the catch-up step. ReplicaManager implements
 * it; the log is handed one by composition, so log and replication are peers over the partition core.
 */
export interface Leadership {
  electIfLeaderDown(topic: TopicMeta, partition: number, uncleanAllowed: boolean): Promise<PartitionState>;
  replicateToFollowers(
    topic: TopicMeta,
    partition: number,
    entry: CommitRecord,
    body: Uint8Array,
    followers: number[],
  ): Promise<void>;
  sync(topic: TopicMeta, partition: number, uncleanAllowed: boolean): Promise<SyncReport>;
}
