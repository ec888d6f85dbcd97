import type { PartitionLog } from '../log/partition-log.js';
import { itemRange, type StoredIndexValue } from '../partition/index-item.js';
import { keepCommitsPast } from '../partition/offset-index.js';
import type { Topic } from '../topics/topics.js';
import type { MetadataStore } from '../storage/ports.js';
import { writeIfUnchanged } from '../storage/optimistic-update.js';
import { entryBytes, type PartitionView } from './partition-view.js';
import { ABORT_PREFIX, abortSk, INDEX_PREFIX, indexSk, partitionPk } from '../storage/key-layout.js';

/**
 * Retention of cleanup.policy=delete (Kafka's deleteOldSegments), on index entries instead of
 * segment files:
 *
 * - retention.ms: from the oldest entry, every entry whose newest timestamp is older than
 *   now - retention.ms goes, up to the first one that is not (Kafka: largestTimestamp);
 * - retention.bytes: from the oldest entry, an entry goes while the partition would still hold at
 *   least retention.bytes without it (Kafka: `size - segment.size >= retention.bytes`); the newest
 *   entry (the active segment) never goes by size;
 * - only entries wholly below the high watermark go.
 *
 * Either rule only moves the log start offset (a conditional write of the partition state; see
 * PartitionLog.advanceLogStartOffset, which DeleteRecords uses as well). The entries below it are
 * removed next (`removeEntriesBelowLogStart`), and their objects, once nothing references them,
 * are deleted by the orphan sweep after file.delete.delay.ms. A fetch below the log start offset
 * is OFFSET_OUT_OF_RANGE from the moment the state is written.
 */
export interface RetentionOutcome {
  /** The offset retention asks for (undefined: nothing to do). */
  target?: number;
  reason?: 'time' | 'size' | 'time,size';
  advanced: boolean;
  logStartOffset: number;
  bytesRemoved: number;
}

/** The log start offset retention.ms and retention.bytes call for, from a partition's view. */
export function retentionTarget(
  view: PartitionView,
  topic: Topic,
  now: number,
): { target?: number; reason?: RetentionOutcome['reason'] } {
  const { entries, state } = view;
  const { retentionMs, retentionBytes } = topic.config;
  let byTime: number | undefined;
  let bySize: number | undefined;
  if (retentionMs >= 0) {
    for (const { entry } of entries) {
      if (entry.lastOffset >= state.highWatermark || !(entry.maxTimestamp < now - retentionMs)) break;
      byTime = entry.lastOffset + 1;
    }
  }
  if (retentionBytes >= 0) {
    let excess = state.sizeInBytes - retentionBytes;
    for (const { entry } of entries.slice(0, -1)) {
      if (entry.lastOffset >= state.highWatermark || excess - entryBytes(entry) < 0) break;
      excess -= entryBytes(entry);
      bySize = entry.lastOffset + 1;
    }
  }
  const target = Math.max(byTime ?? -1, bySize ?? -1);
  if (target <= state.logStartOffset) return {};
  const reason = byTime !== undefined && bySize !== undefined ? 'time,size' : byTime !== undefined ? 'time' : 'size';
  return { target, reason };
}

export async function applyRetention(
  log: PartitionLog,
  view: PartitionView,
  topic: Topic,
  now: number,
): Promise<RetentionOutcome> {
  const { target, reason } = retentionTarget(view, topic, now);
  if (target === undefined) return { advanced: false, logStartOffset: view.state.logStartOffset, bytesRemoved: 0 };
  const r = await log.advanceLogStartOffset(topic, view.partition, target);
  return {
    target,
    ...(reason ? { reason } : {}),
    advanced: r.logStartOffset > r.previous,
    logStartOffset: r.logStartOffset,
    bytesRemoved: r.bytesRemoved,
  };
}

/**
 * Deletes this topic incarnation's index entries that lie wholly below the log start offset (each
 * at the version read, so an entry rewritten meanwhile stays for the next pass). Entries of other
 * incarnations are the purge's. Returns how many went.
 */
export async function removeEntriesBelowLogStart(
  metadata: MetadataStore,
  topic: Topic,
  partition: number,
  logStartOffset: number,
  limit = 1000,
): Promise<number> {
  const pk = partitionPk(topic.name, partition);
  let removed = 0;
  let after = INDEX_PREFIX;
  for (;;) {
    const page = await metadata.query<StoredIndexValue>(pk, { gt: after, lt: indexSk(logStartOffset), limit: 100 });
    for (const item of page) {
      const held = itemRange(item.value);
      if (held.topicId !== topic.id) continue;
      // A packed item (partition/index-item.ts) across the log start: its commits from there on
      // go into an item of their own first.
      if (held.last >= logStartOffset && !(await keepCommitsPast(metadata, item, logStartOffset - 1))) continue;
      if (await writeIfUnchanged(metadata, { pk, sk: item.sk, item }, { remove: true })) removed++;
    }
    if (page.length < 100 || removed >= limit) return removed;
    after = page.at(-1)!.sk;
  }
}

/** Abort items deleted per query (and at once). */
const ABORT_PAGE = 1000;

/**
 * Deletes the aborted-transaction items whose ABORT marker lies below `offset`: the log start
 * (no fetch reads that far back any more), or where compaction removed the aborted records. All of
 * them, page by page: the callers run this only in a pass that removed entries or cleaned, and one
 * entry (a merged segment) can hold thousands of markers, so items left for a later pass would
 * stay until the bound moves again. Idempotent; returns how many went.
 */
export async function removeAbortedBelow(
  metadata: MetadataStore,
  topic: Topic,
  partition: number,
  offset: number,
): Promise<number> {
  const pk = partitionPk(topic.name, partition);
  let removed = 0;
  for (;;) {
    const items = await metadata.query(pk, { gte: ABORT_PREFIX, lt: abortSk(offset), limit: ABORT_PAGE });
    await Promise.all(items.map((i) => metadata.delete(pk, i.sk)));
    removed += items.length;
    if (items.length < ABORT_PAGE) return removed;
  }
}
