import { ConditionFailedError, type MetadataStore, type MetaItem } from '../storage/ports.js';
import type { OffsetIndex } from './offset-index.js';
import {
  computeHighWatermark,
  initialPartitionState,
  logEndOffset,
  partitionPk,
  STATE_SK,
  type CommitRecord,
  type PartitionState,
} from './partition-state.js';
import type { TopicMeta } from './topics.js';

/** What a commit needs to know about the batches it makes visible. */
export interface PendingCommit {
  objectKey: string;
  start: number;
  end: number;
  recordCount: number;
  maxTimestamp: number;
  stores: number[];
  producerId?: number;
}

export interface CommitResult {
  entry: CommitRecord;
  state: PartitionState;
  /** How many times the conditional write lost a race and was retried. */
  retries: number;
  /** Whether the index entry landed (if not, the next writer or reader repairs it). */
  indexed: boolean;
}

/**
 * Reads the partition state item; a missing item, or one left by a deleted topic of the same name,
 * reads as the initial state (keeping the stale item's version so the first write replaces it).
 */
export async function readPartitionState(
  metadata: MetadataStore,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
): Promise<{ state: PartitionState; version?: number }> {
  const item = await metadata.get<PartitionState>(partitionPk(topic.name, partition), STATE_SK);
  return fromItem(item, topic, partition, storeCount);
}

function fromItem(item: MetaItem<PartitionState> | undefined, topic: TopicMeta, partition: number, storeCount: number) {
  if (item && item.value.topicId === topic.id) return { state: item.value, version: item.version };
  return { state: initialPartitionState(topic.id, partition, topic.replicationFactor, storeCount), version: item?.version };
}

/**
 * Step 3 and 4 of the commit protocol (DESIGN.md): assign the next offsets with one conditional
 * write of the partition state, then write the index entry.
 *
 * Timeline of a race: writers A and B both read version v with LEO = n. A's write
 * (`ifVersion v`) lands: offsets n.. are A's. B's fails with the item as A left it (v+1, LEO
 * n + |A|), so B retries from there without a re-read; the object B already wrote never changes,
 * because objects carry no absolute offsets. Offsets therefore stay gap-free and unique.
 *
 * The state also keeps `lastCommit`. If a writer dies after its state write and before its index
 * write, the next writer (or reader) finds the index entry missing and writes it from that pointer
 * before the pointer is overwritten, so a committed batch is never unreachable.
 */
export async function commitToPartition(
  deps: { metadata: MetadataStore; index: OffsetIndex; storeCount: number; isIndexed: (pk: string, baseOffset: number) => boolean },
  topic: TopicMeta,
  partition: number,
  pending: PendingCommit,
  leaderEpoch?: number,
): Promise<CommitResult> {
  const pk = partitionPk(topic.name, partition);
  let current = await readPartitionState(deps.metadata, topic, partition, deps.storeCount);
  for (let retries = 0; ; retries++) {
    const { state, version } = current;
    const last = state.lastCommit;
    if (last && last.topicId === topic.id && !deps.isIndexed(pk, last.baseOffset)) {
      if (!(await deps.index.exists(topic.name, partition, last.baseOffset))) await deps.index.put(topic.name, partition, last);
    }
    const baseOffset = logEndOffset(state);
    const entry: CommitRecord = {
      topicId: topic.id,
      baseOffset,
      lastOffset: baseOffset + pending.recordCount - 1,
      recordCount: pending.recordCount,
      maxTimestamp: pending.maxTimestamp,
      leaderEpoch: leaderEpoch ?? state.leaderEpoch,
      objectKey: pending.objectKey,
      start: pending.start,
      end: pending.end,
      stores: pending.stores,
      ...(pending.producerId !== undefined ? { producerId: pending.producerId } : {}),
    };
    const replicaLeo = { ...state.replicaLeo };
    for (const r of state.isr) if (pending.stores.includes(r)) replicaLeo[String(r)] = entry.lastOffset + 1;
    const next: PartitionState = {
      ...state,
      replicaLeo,
      sizeInBytes: state.sizeInBytes + (pending.end - pending.start),
      lastCommit: entry,
    };
    next.highWatermark = computeHighWatermark(next);
    let written: MetaItem<PartitionState>;
    try {
      written = await deps.metadata.put(pk, STATE_SK, next, version === undefined ? { ifAbsent: true } : { ifVersion: version });
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      current = fromItem(e.current as MetaItem<PartitionState> | undefined, topic, partition, deps.storeCount);
      continue;
    }
    // Committed from here on: a failed index write is repaired from `lastCommit`, so it does not
    // turn an appended batch into an error the producer would retry (and duplicate).
    const indexed = await deps.index.put(topic.name, partition, entry).then(() => true, () => false);
    return { entry, state: written.value, retries, indexed };
  }
}
