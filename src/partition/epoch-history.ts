import type { EpochEntry } from './partition-state.js';

/**
 * The leader-epoch history of a partition, as Kafka's LeaderEpochFileCache keeps it: each entry
 * says at which offset an epoch's leader started appending. It decides which data survives a
 * leader change: whatever a replica holds past the end offset of its last epoch was never
 * acknowledged under that epoch's successor and is truncated.
 */

/** Records that `epoch` starts at `startOffset`; entries after it (a diverged tail) are dropped. */
export function assignEpoch(history: EpochEntry[], epoch: number, startOffset: number): EpochEntry[] {
  const kept = history.filter((e) => e.epoch < epoch && e.startOffset <= startOffset);
  return [...kept, { epoch, startOffset }];
}

/**
 * Kafka's endOffsetFor: the first offset NOT written under `epoch` (the start offset of the next
 * newer epoch), or `logEndOffset` when `epoch` is the latest. An epoch older than the history's
 * first entry ends where the history starts.
 */
export function endOffsetFor(history: EpochEntry[], epoch: number, logEndOffset: number): number {
  const next = history.find((e) => e.epoch > epoch);
  if (next) return next.startOffset;
  return logEndOffset;
}

/** A committed run of offsets belongs to the log only if it ends before its epoch did. */
export function withinEpoch(history: EpochEntry[], entry: { leaderEpoch: number; lastOffset: number }): boolean {
  return entry.lastOffset < endOffsetFor(history, entry.leaderEpoch, Number.MAX_SAFE_INTEGER);
}
