/**
 * What one append committed on a partition, as the listeners after the commit see it: its offsets,
 * the partition's high watermark and last stable offset right after it, and its batches as a
 * reader would get them (absolute offsets, the entry's leader epoch). The push notifier sends
 * small ones to the consumers waiting on the partition, who then need no fetch for them.
 */
import type { CommitRecord, PartitionState } from '../partition/partition-state.js';
import { lastStableOffset } from '../partition/partition-state.js';
import { LOG_OVERHEAD, readBatchHeader, setBaseOffset, setPartitionLeaderEpoch } from '../wire/record-batch.js';

export interface CommittedRun {
  baseOffset: number;
  lastOffset: number;
  highWatermark: number;
  lastStableOffset: number;
  /** Bytes of the batches. */
  byteLength: number;
  /** A copy of the batches with their offsets (the stored object keeps them relative to the run). */
  batches(): Uint8Array;
}

/** `body`: the request object the entry's range points into (not changed). */
export function committedRun(entry: CommitRecord, state: PartitionState, body: Uint8Array): CommittedRun {
  return {
    baseOffset: entry.baseOffset,
    lastOffset: entry.lastOffset,
    highWatermark: state.highWatermark,
    lastStableOffset: lastStableOffset(state),
    byteLength: entry.end - entry.start,
    batches() {
      const bytes = body.slice(entry.start, entry.end);
      for (let at = 0; at < bytes.length; ) {
        const header = readBatchHeader(bytes, at);
        setBaseOffset(bytes, at, entry.baseOffset + header.baseOffset);
        setPartitionLeaderEpoch(bytes, at, entry.leaderEpoch);
        at += LOG_OVERHEAD + header.batchLength;
      }
      return bytes;
    },
  };
}
