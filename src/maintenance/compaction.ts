import { OffsetIndex, type AbortedTransaction } from '../partition/offset-index.js';
import { lastStableOffset } from '../partition/partition-state.js';
import {
  CONTROL_FLAG_MASK,
  decodeRecordBatches,
  encodeRecordBatch,
  LOG_OVERHEAD,
  setBaseOffset,
  TRANSACTIONAL_FLAG_MASK,
  type DecodedRecord,
  type CompressionType,
} from '../wire/record-batch.js';
import { storedCompression } from '../log/request-object.js';
import { chunkRecords, recordSizeUpperBound } from '../wire/record-size.js';
import type { Topic } from '../topics/topics.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import { writeIfUnchanged } from '../storage/optimistic-update.js';
import { readFeatureLevel } from '../storage/feature-level.js';
import { codecFeatureLevel, requireCodecAllowed } from '../storage/formats.js';
import { endsItem, entryBytes, type EntryItem, type PartitionView } from './partition-view.js';
import { coverOf, loadEntries, writeSegment, type Piece } from './segment-writer.js';
import { CLEANER_SK, partitionPk } from '../storage/key-layout.js';
import { removeAbortedBelow } from './retention.js';

/**
 * Log compaction for cleanup.policy=compact (and compact,delete), after Kafka's LogCleaner:
 *
 * - The log splits at the cleaner checkpoint (item `part#{topic}#{p}` / `cleaner`, Kafka's
 *   cleaner-offset-checkpoint) into a clean head and a dirty tail. The dirty tail ends at the first
 *   uncleanable offset: the high watermark, the last commit (the active segment), entries not yet
 *   stable (see partition-view.ts), and the first entry whose newest record is younger than
 *   min.compaction.lag.ms.
 * - The log is cleaned when dirty / (clean + dirty) bytes exceeds min.cleanable.dirty.ratio (strictly,
 *   as Kafka compares), or when the oldest dirty entry is older than max.compaction.lag.ms.
 * - Cleaning maps every key of the dirty tail to its latest offset (at most maxCleanBytes of dirty
 *   entries per pass, like Kafka's dedupe buffer), then rewrites the whole cleanable range: a
 *   record stays iff no later record of its key exists. Offsets never change: kept records keep
 *   theirs (batches with offset deltas), and a range left with no record at all keeps an empty
 *   batch, so its last offset stays covered. Records without a key are dropped, as Kafka's cleaner
 *   does (produce already rejects them on compacted topics with INVALID_RECORD).
 * - A tombstone (null value) stays for delete.retention.ms after the cleaning that first saw it
 *   (KIP-534's delete horizon). The checkpoint keeps one record per cleaning {from, upTo, at}; a
 *   tombstone in [from, upTo) may go once at + delete.retention.ms has passed. Records of pruned
 *   cleanings are past their horizon by construction.
 * - Transactions, as Kafka's cleaner treats them: nothing at or past the last stable offset is
 *   cleaned; the records of aborted transactions (the range's list read whole, paged) are removed
 *   (and never shadow a committed value of their key); committed transactional records are
 *   compacted as any other. A transaction
 *   marker is kept, as its own control batch, for delete.retention.ms after the cleaning that first
 *   saw it (as a tombstone is), then removed: readers need no marker (the LSO and the aborted
 *   transactions index live in the metadata). The index's items of the transactions a cleaning
 *   removed go with the next cleaning past the grace time.
 * - The output is swapped in piece by piece (segment-writer.ts), conditionally, so a concurrent
 *   produce is never lost; the checkpoint moves after the swap, so a pass that dies in between is
 *   redone (cleaning is idempotent).
 */

export interface CleanerCheckpoint {
  topicId: string;
  /** First dirty offset. */
  cleanedTo: number;
  /** The cleanings whose tombstones are still kept: range, time, and how many tombstones it kept. */
  cleanings: { from: number; upTo: number; at: number; tombstones: number }[];
  /** When `cleanedTo` was written (absent in checkpoints from before it was kept). */
  at?: number;
}

export interface CompactionOutcome {
  cleaned: boolean;
  reason?: 'dirty-ratio' | 'max-compaction-lag' | 'delete-horizon';
  dirtyRatio: number;
  /** The range rewritten, [from, to). */
  from?: number;
  to?: number;
  recordsRemoved: number;
  tombstonesRemoved: number;
  entriesReplaced: number;
  segmentsWritten: number;
  bytesBefore: number;
  bytesAfter: number;
  conflicts: number;
  /** Aborted-transaction items removed below an earlier cleaning's end. */
  abortedRemoved: number;
}

export interface CompactionDeps {
  metadata: MetadataStore;
  stores: ObjectStore[];
  now: number;
  entryBytes: number;
  maxSegmentBytes: number;
  maxCleanBytes: number;
  /** How long an object no entry points at is kept (orphanGraceMs): a reader may still be reading it. */
  graceMs: number;
}

/** Entries loaded per round trip (bounded memory: about LOAD_CHUNK * entryBytes). */
const LOAD_CHUNK = 16;

const keyString = (key: Uint8Array) => Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');

export async function compactPartition(
  deps: CompactionDeps,
  view: PartitionView,
  topic: Topic,
): Promise<CompactionOutcome> {
  const { now } = deps;
  const cfg = topic.config;
  const outcome: CompactionOutcome = {
    cleaned: false,
    dirtyRatio: 0,
    recordsRemoved: 0,
    tombstonesRemoved: 0,
    entriesReplaced: 0,
    segmentsWritten: 0,
    bytesBefore: 0,
    bytesAfter: 0,
    conflicts: 0,
    abortedRemoved: 0,
  };
  const pk = partitionPk(topic.name, view.partition);
  const item = await deps.metadata.get<CleanerCheckpoint>(pk, CLEANER_SK);
  const checkpoint: CleanerCheckpoint =
    item?.value.topicId === topic.id ? item.value : { topicId: topic.id, cleanedTo: 0, cleanings: [] };
  // Open transactions may still commit or abort: the cleanable log ends before the LSO.
  const lso = lastStableOffset(view.state);
  let stableEnd = view.stableCount;
  while (stableEnd > 0 && view.entries[stableEnd - 1]!.entry.lastOffset >= lso) stableEnd--;
  const stable = view.entries.slice(0, stableEnd);
  // Every aborted transaction of the range, whole: one left out would be cleaned as committed.
  const aborted = abortedLookup(
    stable.length > 0
      ? await new OffsetIndex(deps.metadata).collectAbortedTransactions(
          topic.name,
          view.partition,
          view.state,
          view.state.logStartOffset,
          stable.at(-1)!.entry.lastOffset + 1,
        )
      : [],
  );
  const firstDirty = Math.max(checkpoint.cleanedTo, view.state.logStartOffset);

  // Entries [0, dirtyStart) are clean, [dirtyStart, end) dirty and cleanable.
  let dirtyStart = stable.findIndex((e) => e.entry.lastOffset >= firstDirty);
  if (dirtyStart < 0) dirtyStart = stable.length;
  let end = stable.length;
  if (cfg.minCompactionLagMs > 0) {
    const young = stable.findIndex((e, i) => i >= dirtyStart && e.entry.maxTimestamp > now - cfg.minCompactionLagMs);
    if (young >= 0) end = young;
  }
  let cleanBytes = 0;
  let dirtyBytes = 0;
  for (let i = 0; i < end; i++) {
    if (i < dirtyStart) cleanBytes += entryBytes(stable[i]!.entry);
    else dirtyBytes += entryBytes(stable[i]!.entry);
  }
  outcome.dirtyRatio = dirtyBytes / Math.max(1, cleanBytes + dirtyBytes);
  const hasDirty = dirtyStart < end;
  const ratioMet = hasDirty && outcome.dirtyRatio > cfg.minCleanableDirtyRatio;
  const overdue =
    hasDirty &&
    cfg.maxCompactionLagMs < Number.MAX_SAFE_INTEGER &&
    stable[dirtyStart]!.entry.maxTimestamp < now - cfg.maxCompactionLagMs;
  // Tombstones kept by an earlier cleaning whose delete horizon passed: clean to drop them (KIP-534).
  const horizonDue =
    dirtyStart > 0 && checkpoint.cleanings.some((c) => c.tombstones > 0 && c.at + cfg.deleteRetentionMs <= now);
  if (!ratioMet && !overdue && !horizonDue) return outcome;
  outcome.reason = ratioMet ? 'dirty-ratio' : overdue ? 'max-compaction-lag' : 'delete-horizon';

  // Map the dirty tail (bounded): key -> latest offset.
  let mapped = dirtyStart;
  let mappedBytes = 0;
  const latest = new Map<string, number>();
  while (
    mapped < end &&
    (mapped === dirtyStart ||
      mappedBytes + entryBytes(stable[mapped]!.entry) <= deps.maxCleanBytes ||
      !endsItem(stable[mapped - 1]!))
  ) {
    const chunk = stable.slice(mapped, Math.min(end, mapped + LOAD_CHUNK));
    const datas = await loadEntries(
      deps.stores,
      view.state,
      chunk.map((c) => c.entry),
    );
    let taken = 0;
    for (let k = 0; k < chunk.length; k++) {
      if (
        mapped + k > dirtyStart &&
        mappedBytes + entryBytes(chunk[k]!.entry) > deps.maxCleanBytes &&
        endsItem(stable[mapped + k - 1]!)
      )
        break;
      mappedBytes += entryBytes(chunk[k]!.entry);
      for (const r of recordsOf(chunk[k]!, datas[k]!, aborted))
        if (!isMarker(r) && r.key !== null) latest.set(keyString(r.key), r.offset);
      taken++;
    }
    mapped += taken;
    if (taken < chunk.length) break;
  }
  const cleanEnd = hasDirty ? mapped : dirtyStart; // entries [0, cleanEnd) are rewritten
  const upTo = stable[cleanEnd - 1]!.entry.lastOffset + 1;
  const newCleaning = hasDirty ? { from: firstDirty, upTo, at: now, tombstones: 0 } : undefined;
  const cleanings = checkpoint.cleanings.map((c) => ({ ...c, tombstones: 0 }));
  outcome.from = stable[0]!.entry.baseOffset;
  outcome.to = upTo;

  /** The cleaning that first saw the record at `offset` (this one, for the dirty tail). */
  const cleaningOf = (offset: number) =>
    offset >= firstDirty ? newCleaning : cleanings.find((x) => offset >= x.from && offset < x.upTo);
  const keep = (r: CleanedRecord): boolean => {
    if (isMarker(r)) {
      const cleaning = cleaningOf(r.offset);
      if (!cleaning || (cleaning !== newCleaning && cleaning.at + cfg.deleteRetentionMs <= now)) return false;
      cleaning.tombstones++; // held for its horizon as a tombstone is
      return true;
    }
    if (r.key === null) return false;
    const newest = latest.get(keyString(r.key));
    if (newest !== undefined && newest > r.offset) return false;
    if (r.value === null) {
      // No record of a cleaning: it was pruned, which happens only once its horizon passed.
      const cleaning = cleaningOf(r.offset);
      if (!cleaning || (cleaning !== newCleaning && cleaning.at + cfg.deleteRetentionMs <= now)) {
        outcome.tombstonesRemoved++;
        return false;
      }
      cleaning.tombstones++;
    }
    return true;
  };

  // Rewrite [0, cleanEnd) in pieces of about entryBytes, segments of about maxSegmentBytes.
  const segmentLimit = Math.max(1, Math.min(cfg.segmentBytes, deps.maxSegmentBytes));
  let pieces: Piece[] = [];
  let segmentSize = 0;
  let run: EntryItem[] = [];
  let kept: CleanedRecord[] = [];
  let keptBytes = 0;
  let dropped = 0;
  const flushSegment = async () => {
    if (pieces.length === 0) return;
    const written = await writeSegment({ metadata: deps.metadata, stores: deps.stores, now }, view, pieces);
    outcome.segmentsWritten++;
    outcome.entriesReplaced += written.replacedEntries;
    outcome.bytesBefore += written.bytesBefore;
    outcome.bytesAfter += written.bytesAfter;
    outcome.conflicts += written.conflicts;
    pieces = [];
    segmentSize = 0;
  };
  // Re-encoding in a codec that code a rollback may bring back cannot read waits for the feature
  // level, as a produce does: the cleaning stops with UNSUPPORTED_COMPRESSION_TYPE (as a process
  // dying between two segments would), and goes on once the level is raised.
  const compression = storedCompression(topic);
  let level: Promise<number> | undefined;
  const requireCompressionAllowed = async () => {
    if (codecFeatureLevel(compression) > 1)
      requireCodecAllowed(compression, await (level ??= readFeatureLevel(deps.metadata)));
  };
  const flushPiece = async () => {
    if (run.length === 0) return;
    // A single entry that lost nothing stays as it is.
    if (dropped > 0 || run.length > 1) {
      await requireCompressionAllowed();
      const batches = encodePiece(run[0]!.entry.baseOffset, run.at(-1)!.entry.lastOffset, kept, cfg.maxMessageBytes, {
        type: compression,
        level: topic.config.compressionLevel,
      });
      const maxTimestamp =
        kept.length > 0 ? kept.reduce((m, r) => Math.max(m, isMarker(r) ? -1 : r.timestamp), -1) : undefined;
      pieces.push({
        replaced: run,
        entry: coverOf(run, topic, {
          recordCount: kept.length,
          ...(maxTimestamp !== undefined && maxTimestamp >= 0 ? { maxTimestamp } : {}),
        }),
        batches,
      });
      segmentSize += batches.reduce((n, b) => n + b.byteLength, 0);
      outcome.recordsRemoved += dropped;
    }
    run = [];
    kept = [];
    keptBytes = 0;
    dropped = 0;
    if (segmentSize >= segmentLimit) await flushSegment();
  };
  for (let i = 0; i < cleanEnd; i += LOAD_CHUNK) {
    const chunk = stable.slice(i, Math.min(cleanEnd, i + LOAD_CHUNK));
    const datas = await loadEntries(
      deps.stores,
      view.state,
      chunk.map((c) => c.entry),
    );
    for (let k = 0; k < chunk.length; k++) {
      const records = recordsOf(chunk[k]!, datas[k]!, aborted);
      if (
        run.length > 0 &&
        keptBytes > 0 &&
        keptBytes + entryBytes(chunk[k]!.entry) > deps.entryBytes &&
        endsItem(run.at(-1)!)
      )
        await flushPiece();
      run.push(chunk[k]!);
      dropped += abortedCount(chunk[k]!, datas[k]!, aborted);
      for (const r of records) {
        if (keep(r)) {
          kept.push(r);
          keptBytes += isMarker(r) ? r.marker.byteLength : recordSizeUpperBound(r);
        } else dropped++;
      }
    }
  }
  await flushPiece();
  await flushSegment();
  outcome.cleaned = true;

  if (outcome.conflicts === 0) {
    // A cleaning that keeps no tombstone is forgotten: its range is clean, nothing new enters it.
    const kept = [...cleanings, ...(newCleaning ? [newCleaning] : [])].filter(
      (c) => c.tombstones > 0 && c.upTo > view.state.logStartOffset,
    );
    const next: CleanerCheckpoint = {
      topicId: topic.id,
      cleanedTo: Math.max(firstDirty, upTo),
      cleanings: kept,
      at: now,
    };
    // A checkpoint another cleaner moved meanwhile stays as it is: this range is cleaned again.
    await writeIfUnchanged(deps.metadata, { pk, sk: CLEANER_SK, item }, { write: next });
  }
  // The cleaning that wrote the checkpoint found here removed every aborted record below its
  // cleanedTo, and a reader that read the index before it has had graceMs (the old objects' time)
  // to finish: the abort items of those transactions serve no read any more. Without this, a
  // topic with no retention (compact only) keeps one item per aborted transaction for ever, and
  // every cleaning reads them all.
  if (item?.value.topicId === topic.id && checkpoint.at !== undefined && checkpoint.at + deps.graceMs <= now)
    outcome.abortedRemoved = await removeAbortedBelow(deps.metadata, topic, view.partition, checkpoint.cleanedTo);
  return outcome;
}

/** A transaction marker kept by a cleaning: its control batch as stored, at its absolute offset. */
interface KeptMarker {
  marker: Uint8Array;
  offset: number;
}

type CleanedRecord = DecodedRecord | KeptMarker;

const isMarker = (r: CleanedRecord): r is KeptMarker => 'marker' in r;

/** Whether a transactional batch of a producer starting at an offset belongs to an aborted transaction. */
type AbortedLookup = ((producerId: number, offset: number) => boolean) & { none: boolean };

/**
 * `isAborted` over a cleaning's aborted transactions, which may be thousands, for every
 * transactional batch of its range: per producer, the transactions in first-offset order with the
 * highest last offset so far; a batch is aborted iff one starting at or before it ends at or after
 * it, found by binary search.
 */
function abortedLookup(aborted: readonly AbortedTransaction[]): AbortedLookup {
  const byProducer = new Map<number, { firstOffsets: number[]; maxLast: number[] }>();
  const sorted = [...aborted].sort((a, b) => a.firstOffset - b.firstOffset);
  for (const a of sorted) {
    let p = byProducer.get(a.producerId);
    if (!p) byProducer.set(a.producerId, (p = { firstOffsets: [], maxLast: [] }));
    p.firstOffsets.push(a.firstOffset);
    p.maxLast.push(Math.max(a.lastOffset, p.maxLast.at(-1) ?? -1));
  }
  const lookup = (producerId: number, offset: number) => {
    const p = byProducer.get(producerId);
    if (!p) return false;
    let lo = 0; // becomes the number of transactions starting at or before `offset`
    let hi = p.firstOffsets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (p.firstOffsets[mid]! <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && p.maxLast[lo - 1]! >= offset;
  };
  return Object.assign(lookup, { none: aborted.length === 0 });
}

/** An entry's records with absolute offsets, without aborted transactions' batches; markers as whole batches. */
function recordsOf(item: EntryItem, data: Uint8Array, isAborted: AbortedLookup): CleanedRecord[] {
  const out: CleanedRecord[] = [];
  let at = 0;
  for (const batch of decodeRecordBatches(data)) {
    const { attributes, producerId } = batch.header;
    const base = item.entry.baseOffset + batch.header.baseOffset;
    const size = LOG_OVERHEAD + batch.header.batchLength;
    if (attributes & CONTROL_FLAG_MASK) out.push({ marker: data.slice(at, at + size), offset: base });
    else if (!(attributes & TRANSACTIONAL_FLAG_MASK && isAborted(producerId, base))) {
      for (const r of batch.records) out.push({ ...r, offset: item.entry.baseOffset + r.offset });
    }
    at += size;
  }
  return out;
}

/** How many records of an entry belong to aborted transactions (all removed by the cleaning). */
function abortedCount(item: EntryItem, data: Uint8Array, isAborted: AbortedLookup): number {
  if (isAborted.none) return 0;
  let n = 0;
  for (const batch of decodeRecordBatches(data)) {
    const { attributes, producerId } = batch.header;
    if (
      !(attributes & CONTROL_FLAG_MASK) &&
      attributes & TRANSACTIONAL_FLAG_MASK &&
      isAborted(producerId, item.entry.baseOffset + batch.header.baseOffset)
    )
      n += batch.records.length;
  }
  return n;
}

/**
 * Kept records as batches relative to `base`, each within max.message.bytes, keeping their
 * offsets; a kept marker stays its own control batch. A piece with no record left is one empty
 * batch spanning it (Kafka keeps empty batches for the same reason: the offsets they covered stay
 * accounted for).
 */
function encodePiece(
  base: number,
  lastOffset: number,
  records: CleanedRecord[],
  maxMessageBytes: number,
  compression: { type: CompressionType; level: number | undefined },
): Uint8Array[] {
  if (records.length === 0) return [encodeRecordBatch([], { baseOffset: 0, lastOffsetDelta: lastOffset - base })];
  const batches: Uint8Array[] = [];
  // The records between two markers, cut into batches as a produce cuts them.
  let run: DecodedRecord[] = [];
  const flush = () => {
    for (const chunk of chunkRecords(run, maxMessageBytes)) {
      const first = chunk[0]!.offset;
      batches.push(
        encodeRecordBatch(chunk, {
          baseOffset: first - base,
          offsetDeltas: chunk.map((r) => r.offset - first),
          compression: compression.type,
          ...(compression.level === undefined ? {} : { compressionLevel: compression.level }),
        }),
      );
    }
    run = [];
  };
  for (const r of records) {
    if (isMarker(r)) {
      flush();
      setBaseOffset(r.marker, 0, r.offset - base); // outside the CRC
      batches.push(r.marker);
      continue;
    }
    run.push(r);
  }
  flush();
  return batches;
}
