import { KafkaError } from '../wire/errors.js';
import { UnknownFormatError } from '../storage/formats.js';
import { readPartitionState } from '../partition/shard-state.js';
import type { CommitRecord, PartitionState } from '../partition/partition-state.js';
import type { TopicMeta } from '../topics/topics.js';
import type { MetadataStore, MetaItem, ObjectStore } from '../storage/ports.js';
import type { StoredIndexValue } from '../partition/index-item.js';
import { keepCommitsPast } from '../partition/offset-index.js';
import { writeIfUnchanged } from '../storage/optimistic-update.js';
import type { EntryItem, PartitionView } from './partition-view.js';
import { newSegmentKey, partitionPk } from '../storage/key-layout.js';

/**
 * Rewriting a partition's entries into segment objects, shared by segment merge and compaction.
 *
 * A *piece* replaces a run of consecutive entries with one covering entry: same base offset (so
 * the same index item), the run's last offset, and batches whose offsets are relative to that
 * base, as every entry's are. A *segment* is one object holding the pieces of one partition end to
 * end. The object is written first (to the leader's store and every in-sync follower's; other
 * replicas best effort), then each piece is swapped into the index:
 *
 *   1. put the covering entry over the run's first item, on condition that item is still at the
 *      version read (`ifVersion`): a concurrent writer that touched it makes the swap give up;
 *   2. delete the run's other items in offset order, each at the version read, stopping at the
 *      first one that changed (the rest are left to the next pass).
 *
 * Each is one conditional write through `writeIfUnchanged` (storage/optimistic-update.ts): never
 * retried against a newer version, but a write the store sent twice (its first answer lost) is
 * recognised as applied rather than taken for a conflict.
 *
 * Between 1 and 2 the old entries are still there, but wholly covered: readers skip them (see
 * OffsetIndex.entriesFrom), and the next pass deletes them. Deleting in offset order keeps every
 * offset findable by the readers' floor lookup: the entry at or below it is either an old entry
 * that contains it, or (once those are gone) the covering one. No step ever leaves a gap, so no
 * committed record becomes unreachable, and a produce (which only adds entries above the high
 * watermark, never inside a stable run) is never touched. An abandoned swap leaves an unreferenced
 * object, which the orphan sweep deletes.
 */

export interface Piece {
  replaced: EntryItem[];
  /** The covering entry without its location (filled in when the segment is written). */
  entry: Omit<CommitRecord, 'objectKey' | 'start' | 'end' | 'stores'>;
  batches: Uint8Array[];
}

export interface SegmentOutcome {
  /** Pieces swapped into the index. */
  swapped: number;
  /** Pieces given up because an item changed under the swap. */
  conflicts: number;
  /** Entries replaced (swapped pieces only). */
  replacedEntries: number;
  bytesBefore: number;
  bytesAfter: number;
  objectKey: string;
}

/** Loads the bytes of entries (one GET per adjacent range of one object), from the leader or an in-sync follower. */
export async function loadEntries(
  stores: ObjectStore[],
  state: PartitionState,
  entries: CommitRecord[],
): Promise<Uint8Array[]> {
  const runs: { key: string; start: number; end: number; members: number[] }[] = [];
  entries.forEach((e, i) => {
    const run = runs.at(-1);
    if (run && run.key === e.objectKey && run.end === e.start) {
      run.end = e.end;
      run.members.push(i);
    } else runs.push({ key: e.objectKey, start: e.start, end: e.end, members: [i] });
  });
  const sources = [state.leader, ...state.isr.filter((r) => r !== state.leader)];
  const out: Uint8Array[] = new Array(entries.length);
  await Promise.all(
    runs.map(async (run) => {
      const data = await getFromAny(stores, sources, run.key, { start: run.start, end: run.end });
      for (const i of run.members) {
        const e = entries[i]!;
        out[i] = data.subarray(e.start - run.start, e.end - run.start);
      }
    }),
  );
  return out;
}

async function getFromAny(
  stores: ObjectStore[],
  sources: number[],
  key: string,
  range: { start: number; end: number },
): Promise<Uint8Array> {
  let lastError: unknown;
  for (const r of sources) {
    const store = stores[r];
    if (!store) continue;
    try {
      return await store.get(key, range);
    } catch (e) {
      // Every replica holds the same format: a newer one than this code reads is the answer.
      if (e instanceof UnknownFormatError) throw e;
      lastError = e;
    }
  }
  throw new KafkaError('KAFKA_STORAGE_ERROR', `No replica store could serve ${key}`, { cause: lastError });
}

/**
 * Writes one segment of `pieces` and swaps them into the index (see the module comment). Gives up
 * before any swap if the partition's leader epoch changed meanwhile (an election may have
 * truncated what was read).
 */
export async function writeSegment(
  deps: { metadata: MetadataStore; stores: ObjectStore[]; now: number },
  view: PartitionView,
  pieces: Piece[],
): Promise<SegmentOutcome> {
  const { topic, partition, state } = view;
  const first = pieces[0]!.entry.baseOffset;
  const key = newSegmentKey(topic.id, partition, first, deps.now);
  const size = pieces.reduce((n, p) => n + p.batches.reduce((m, b) => m + b.byteLength, 0), 0);
  const body = new Uint8Array(size);
  const located: CommitRecord[] = [];
  let pos = 0;
  for (const piece of pieces) {
    const start = pos;
    for (const b of piece.batches) {
      body.set(b, pos);
      pos += b.byteLength;
    }
    located.push({ ...piece.entry, objectKey: key, start, end: pos, stores: [] });
  }
  const stores = await putToReplicas(deps.stores, state, key, body);
  const outcome: SegmentOutcome = {
    swapped: 0,
    conflicts: 0,
    replacedEntries: 0,
    bytesBefore: 0,
    bytesAfter: 0,
    objectKey: key,
  };
  const current = await readPartitionState(deps.metadata, topic, partition, deps.stores.length, () => deps.now);
  if (current.state.leaderEpoch !== state.leaderEpoch || current.state.topicId !== state.topicId) {
    outcome.conflicts = pieces.length;
    return outcome;
  }
  const pk = partitionPk(topic.name, partition);
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    const entry = { ...located[i]!, stores };
    // A packed item (partition/index-item.ts) holds several entries, written over or deleted once.
    // A piece starts where an item does (the item at its head is written over); one it ends inside
    // keeps the commits past it in an item of their own, written before the swap.
    const [head, ...rest] = piece.replaced.filter((r, k) => k === 0 || r.sk !== piece.replaced[k - 1]!.sk);
    if (
      head!.itemFirst < entry.baseOffset ||
      !(await keepPast(deps.metadata, pk, piece.replaced.at(-1)!, entry.lastOffset))
    ) {
      outcome.conflicts++;
      continue;
    }
    if (
      !(await writeIfUnchanged<CommitRecord>(
        deps.metadata,
        { pk, sk: head!.sk, item: asItem(pk, head!) },
        { write: entry },
      ))
    ) {
      outcome.conflicts++;
      continue;
    }
    for (const r of rest) {
      // Changed under us: it and the ones after it stay covered, removed next pass.
      if (!(await writeIfUnchanged(deps.metadata, { pk, sk: r.sk, item: asItem(pk, r) }, { remove: true }))) break;
    }
    outcome.swapped++;
    outcome.replacedEntries += piece.replaced.length;
    outcome.bytesBefore += piece.replaced.reduce((n, r) => n + (r.entry.end - r.entry.start), 0);
    outcome.bytesAfter += entry.end - entry.start;
  }
  return outcome;
}

/** A piece that ends inside a packed item (the last it replaces) keeps the item's commits past it. */
async function keepPast(metadata: MetadataStore, pk: string, last: EntryItem, pieceLast: number): Promise<boolean> {
  if (last.itemLast <= pieceLast) return true;
  const item = await metadata.get<StoredIndexValue>(pk, last.sk);
  return item !== undefined && item.version === last.version && keepCommitsPast(metadata, item, pieceLast);
}

/** The leader and every in-sync follower must take the object; other replicas get it if they can. */
async function putToReplicas(
  stores: ObjectStore[],
  state: PartitionState,
  key: string,
  body: Uint8Array,
): Promise<number[]> {
  const required = new Set([state.leader, ...state.isr]);
  const results = await Promise.all(
    state.replicas.map((r) =>
      stores[r]!.put(key, body).then(
        () => true,
        (e: unknown) => {
          if (required.has(r))
            throw new KafkaError('KAFKA_STORAGE_ERROR', `Writing segment ${key} to replica ${r} failed`, { cause: e });
          return false;
        },
      ),
    ),
  );
  return state.replicas.filter((_, i) => results[i]);
}

/** A covering entry's fields from the run it replaces (location filled in by writeSegment). */
export function coverOf(
  replaced: EntryItem[],
  topic: TopicMeta,
  overrides: Partial<Piece['entry']> = {},
): Piece['entry'] {
  const first = replaced[0]!.entry;
  const last = replaced.at(-1)!.entry;
  return {
    topicId: topic.id,
    baseOffset: first.baseOffset,
    lastOffset: last.lastOffset,
    recordCount: replaced.reduce((n, r) => n + r.entry.recordCount, 0),
    maxTimestamp: replaced.reduce((m, r) => Math.max(m, r.entry.maxTimestamp), -1),
    leaderEpoch: replaced.reduce((m, r) => Math.max(m, r.entry.leaderEpoch), 0),
    ...overrides,
  };
}

const asItem = (pk: string, e: EntryItem): MetaItem<CommitRecord> => ({
  pk,
  sk: e.sk,
  version: e.version,
  value: e.entry,
});

/** Deletes leftover entries an interrupted swap left covered, in offset order (see above). */
export async function deleteCovered(metadata: MetadataStore, view: PartitionView): Promise<number> {
  const pk = partitionPk(view.topic.name, view.partition);
  let n = 0;
  for (const c of view.covered) {
    if (!(await writeIfUnchanged(metadata, { pk, sk: c.sk, item: asItem(pk, c) }, { remove: true }))) break;
    n++;
  }
  return n;
}
