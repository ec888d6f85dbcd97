import { readPartitionState } from '../partition/shard-state.js';
import type { CommitRecord, PartitionState } from '../partition/partition-state.js';
import type { TopicMeta } from '../topics/topics.js';
import { inLog } from '../partition/offset-index.js';
import type { MetadataStore } from '../storage/ports.js';
import { INDEX_PREFIX, indexSk, objectCreatedAt, partitionPk } from '../storage/key-layout.js';
import { expandIndexItems, type IndexEntry, type StoredIndexValue } from '../partition/index-item.js';

/**
 * An index entry with the item coordinates a conditional swap needs: the item it is stored in,
 * which a packed item shares with the other commits of its fold (partition/index-item.ts), and the
 * offsets that item holds. A swap writes over or deletes whole items; the later commits of one it
 * ends inside go into an item of their own first (segment-writer.ts).
 */
export interface EntryItem {
  sk: string;
  version: number;
  entry: CommitRecord;
  itemFirst: number;
  itemLast: number;
}

/** Whether a run ends well after this entry: the last of its item (a cut inside one writes the rest again). */
export const endsItem = (e: EntryItem) => e.entry.lastOffset >= e.itemLast;

const asEntryItem = (i: IndexEntry): EntryItem => ({
  sk: i.sk,
  version: i.version,
  entry: i.value,
  itemFirst: i.itemFirst,
  itemLast: i.itemLast,
});

/**
 * What maintenance sees of one partition: its state and the index entries from the one holding
 * the log start offset to the log end, in offset order.
 */
export interface PartitionView {
  topic: TopicMeta;
  partition: number;
  state: PartitionState;
  version: number | undefined;
  /** The log's entries, end to end (each starts where the previous one ended). */
  entries: EntryItem[];
  /** Leftovers a covering segment entry already replaced (an interrupted swap): safe to delete. */
  covered: EntryItem[];
  /** Entries that overlap another only in part: something went wrong, so nothing is rewritten. */
  overlapping: boolean;
  /**
   * The first offset below the high watermark that no entry covers, when there is one that the last
   * commit (whose index write may not have landed yet) does not fill either: a gap readers cannot cross.
   */
  gapAt?: number;
  /**
   * entries[0, stableCount) may be rewritten: below the high watermark, not the last commit, and
   * old enough that no request still in flight can write them again (see `stableCount`).
   */
  stableCount: number;
}

const PAGE = 500;

/** Loads a partition's view; `now` and `graceMs` decide which entries are stable. */
export async function loadPartitionView(
  metadata: MetadataStore,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
  now: number,
  graceMs: number,
): Promise<PartitionView> {
  const { state, version } = await readPartitionState(metadata, topic, partition, storeCount, () => now);
  const pk = partitionPk(topic.name, partition);
  const accept = (e: CommitRecord) => e.topicId === topic.id && inLog(state, e);
  const below = await metadata.query<StoredIndexValue>(pk, {
    lte: indexSk(state.logStartOffset),
    gte: INDEX_PREFIX,
    reverse: true,
    limit: 4,
  });
  const floor = below.find((i) => expandIndexItems([i]).some((e) => accept(e.value)));
  const items: EntryItem[] = (floor ? expandIndexItems([floor]) : [])
    .filter((e) => accept(e.value) && e.value.lastOffset >= state.logStartOffset)
    .map(asEntryItem);
  let after = indexSk(state.logStartOffset);
  for (;;) {
    const page = await metadata.query<StoredIndexValue>(pk, { gt: after, beginsWith: INDEX_PREFIX, limit: PAGE });
    for (const i of expandIndexItems(page)) if (accept(i.value)) items.push(asEntryItem(i));
    if (page.length < PAGE) break;
    after = page.at(-1)!.sk;
  }
  const entries: EntryItem[] = [];
  const covered: EntryItem[] = [];
  let overlapping = false;
  let next = items[0]?.entry.baseOffset ?? state.logStartOffset;
  for (const item of items) {
    const e = item.entry;
    if (e.lastOffset < next) {
      // Covered by the entry before it; only a segment entry ever covers another.
      if (
        entries.length > 0 &&
        objectCreatedAt(entries.at(-1)!.entry.objectKey) === -Infinity &&
        e.lastOffset >= item.itemLast && // a packed item: once, whole
        !covered.some((c) => c.sk === item.sk)
      )
        covered.push(item);
      continue;
    }
    if (e.baseOffset < next) {
      overlapping = true;
      break;
    }
    if (e.baseOffset > next) break; // a gap: only the last commit may be missing from the index
    entries.push(item);
    next = e.lastOffset + 1;
  }
  // Past the index: the last commit, and on a topic with a commit log the commits not folded yet.
  let end = next;
  for (const c of [...(state.pending ?? []), ...(state.lastCommit ? [state.lastCommit] : [])])
    if (c.topicId === topic.id && c.baseOffset <= end && c.lastOffset >= end) end = c.lastOffset + 1;
  const gapAt = !overlapping && end < state.highWatermark ? end : undefined;
  return {
    topic,
    partition,
    state,
    version,
    entries,
    covered,
    overlapping,
    ...(gapAt !== undefined && { gapAt }),
    stableCount: overlapping ? 0 : stableCount(entries, state, now, graceMs),
  };
}

/**
 * How many leading entries are stable. An entry may be rewritten only once no request can still
 * hold it as the partition's last commit, because such a request may write it back to the index
 * (the repair of commit step 4, docs/architecture.md), over a covering entry. The entry stopped being the last
 * commit when its successor committed, which was at most one request duration after the
 * successor's object was created (the time in its key). So an entry is stable when its
 * successor's object is older than the grace (at least twice the longest request). A successor
 * that is itself a segment had, when it was written, a stable predecessor's successor, so it
 * counts as old. The last commit itself has no successor and is never stable (Kafka never cleans
 * the active segment either), nor is anything at or above the high watermark.
 */
function stableCount(entries: EntryItem[], state: PartitionState, now: number, graceMs: number): number {
  let n = 0;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!.entry;
    const successor =
      entries[i + 1]?.entry ??
      (state.lastCommit && state.lastCommit.baseOffset > e.lastOffset ? state.lastCommit : undefined);
    if (!successor || e.lastOffset >= state.highWatermark) break;
    if (state.lastCommit && state.lastCommit.baseOffset === e.baseOffset) break;
    const created = objectCreatedAt(successor.objectKey) ?? now;
    if (!(created < now - graceMs)) break;
    n = i + 1;
  }
  return n;
}

export const entryBytes = (e: CommitRecord) => e.end - e.start;
