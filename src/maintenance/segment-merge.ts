import { readBatchHeader, setBaseOffset, LOG_OVERHEAD } from '../wire/record-batch.js';
import type { Topic } from '../topics/topics.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import { endsItem, entryBytes, type EntryItem, type PartitionView } from './partition-view.js';
import { coverOf, loadEntries, writeSegment, type Piece } from './segment-writer.js';
import { isSegmentKey, objectWrittenAt } from '../storage/key-layout.js';

/**
 * Segment merge: a produce request writes one small object shared by the partitions it touched,
 * so a partition's log is scattered over many objects and a read costs a GET per object. Merge
 * copies a partition's runs of request objects into per-partition segments (up to segment.bytes,
 * spanning at most segment.ms), named by base offset, with entries of about `entryBytes`, so a
 * fetch reads few, large ranges. Batches are copied byte for byte; only their base offset (which
 * the CRC does not cover) is rebased to the covering entry. The swap is segment-writer.ts's.
 *
 * A run is merged once it is full (segment.bytes or segment.ms) or, at the head of the log, once it
 * has `mergeMinEntries` entries; segments are not merged again. Replaced objects are deleted by
 * the orphan sweep once no partition references them, after file.delete.delay.ms.
 */
export interface MergeOutcome {
  segmentsWritten: number;
  entriesReplaced: number;
  bytesCopied: number;
  conflicts: number;
}

export interface MergeDeps {
  metadata: MetadataStore;
  stores: ObjectStore[];
  now: number;
  entryBytes: number;
  maxSegmentBytes: number;
  mergeMinEntries: number;
}

export async function mergeSegments(deps: MergeDeps, view: PartitionView, topic: Topic): Promise<MergeOutcome> {
  const outcome: MergeOutcome = { segmentsWritten: 0, entriesReplaced: 0, bytesCopied: 0, conflicts: 0 };
  const limit = Math.max(1, Math.min(topic.config.segmentBytes, deps.maxSegmentBytes));
  const stable = view.entries.slice(0, view.stableCount);
  for (const group of planGroups(stable, limit, topic.config.segmentMs, deps)) {
    const datas = await loadEntries(
      deps.stores,
      view.state,
      group.map((g) => g.entry),
    );
    const pieces: Piece[] = [];
    let run: { item: EntryItem; data: Uint8Array }[] = [];
    let runBytes = 0;
    const flush = () => {
      if (run.length === 0) return;
      const base = run[0]!.item.entry.baseOffset;
      pieces.push({
        replaced: run.map((r) => r.item),
        entry: coverOf(
          run.map((r) => r.item),
          topic,
        ),
        batches: run.map((r) => rebase(r.data, r.item.entry.baseOffset - base)),
      });
      run = [];
      runBytes = 0;
    };
    group.forEach((item, i) => {
      if (run.length > 0 && runBytes + entryBytes(item.entry) > deps.entryBytes && endsItem(run.at(-1)!.item)) flush();
      run.push({ item, data: datas[i]! });
      runBytes += entryBytes(item.entry);
    });
    flush();
    const written = await writeSegment({ metadata: deps.metadata, stores: deps.stores, now: deps.now }, view, pieces);
    outcome.segmentsWritten++;
    outcome.entriesReplaced += written.replacedEntries;
    outcome.bytesCopied += written.bytesAfter;
    outcome.conflicts += written.conflicts;
  }
  return outcome;
}

/**
 * Runs of consecutive request-object entries cut at segment size and time span. A run cut short by
 * the head of the stable range waits until it has mergeMinEntries entries or is older than
 * segment.ms; a run cut by a segment (already merged or cleaned) is merged as it is.
 */
function planGroups(stable: EntryItem[], limit: number, segmentMs: number, deps: MergeDeps): EntryItem[][] {
  const groups: EntryItem[][] = [];
  let group: EntryItem[] = [];
  let bytes = 0;
  const close = (complete: boolean) => {
    if (group.length > 1 && (complete || group.length >= deps.mergeMinEntries)) groups.push(group);
    group = [];
    bytes = 0;
  };
  for (const item of stable) {
    if (isSegmentKey(item.entry.objectKey)) {
      close(true);
      continue;
    }
    const size = entryBytes(item.entry);
    const spanStart = group[0]?.entry.maxTimestamp;
    if (
      group.length > 0 &&
      endsItem(group.at(-1)!) && // a packed item is merged whole
      (bytes + size > limit || (spanStart !== undefined && item.entry.maxTimestamp - spanStart > segmentMs))
    )
      close(true);
    group.push(item);
    bytes += size;
  }
  // The head: complete if full, or if its oldest object is older than segment.ms.
  const oldest = group[0] && objectWrittenAt(group[0].entry.objectKey);
  close(oldest !== undefined && deps.now - oldest >= segmentMs);
  return groups;
}

/** A copy of an entry's batches with each base offset moved by `delta` (CRC unaffected). */
function rebase(data: Uint8Array, delta: number): Uint8Array {
  const out = Uint8Array.from(data);
  if (delta === 0) return out;
  for (let pos = 0; pos < out.byteLength; ) {
    const header = readBatchHeader(out, pos);
    setBaseOffset(out, pos, header.baseOffset + delta);
    pos += LOG_OVERHEAD + header.batchLength;
  }
  return out;
}
