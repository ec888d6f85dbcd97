import { KafkaError } from '../wire/errors.js';
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

/**
 * Kafka's answer to OffsetForLeaderEpoch (LeaderEpochFileCache.endOffsetFor with its epoch): the
 * latest epoch ends at the log end offset; an older one at the start of the next newer epoch,
 * answered with the largest epoch at or below it (the requested one when it predates the
 * history); an epoch newer than any, or -1, is unknown: (-1, -1).
 */
export function epochEndOffset(
  history: EpochEntry[],
  requestedEpoch: number,
  logEndOffset: number,
): { leaderEpoch: number; endOffset: number } {
  const undefinedEpoch = { leaderEpoch: -1, endOffset: -1 };
  if (requestedEpoch < 0) return undefinedEpoch;
  if (history.at(-1)?.epoch === requestedEpoch) return { leaderEpoch: requestedEpoch, endOffset: logEndOffset };
  const higher = history.find((e) => e.epoch > requestedEpoch);
  if (!higher) return undefinedEpoch;
  const floor = history.filter((e) => e.epoch <= requestedEpoch).at(-1);
  return { leaderEpoch: floor ? floor.epoch : requestedEpoch, endOffset: higher.startOffset };
}

/**
 * KIP-320's check of a client's current leader epoch (Fetch, OffsetForLeaderEpoch, ListOffsets):
 * an older one is FENCED_LEADER_EPOCH (the client's metadata is stale), a newer one
 * UNKNOWN_LEADER_EPOCH (this reader's is); -1 skips the check, as for clients that send none.
 */
export function checkCurrentLeaderEpoch(currentLeaderEpoch: number, leaderEpoch: number, what: string): void {
  if (currentLeaderEpoch < 0) return;
  if (currentLeaderEpoch < leaderEpoch)
    throw new KafkaError(
      'FENCED_LEADER_EPOCH',
      `The leader epoch ${currentLeaderEpoch} of ${what} is older than the current one (${leaderEpoch})`,
    );
  if (currentLeaderEpoch > leaderEpoch)
    throw new KafkaError(
      'UNKNOWN_LEADER_EPOCH',
      `The leader epoch ${currentLeaderEpoch} of ${what} is newer than the current one (${leaderEpoch})`,
    );
}

/** The epoch under which `offset` was written: the last entry starting at or before it (-1 before the history). */
export function epochAt(history: EpochEntry[], offset: number): number {
  let epoch = -1;
  for (const e of history) if (e.startOffset <= offset) epoch = e.epoch;
  return epoch;
}

/** A committed run of offsets belongs to the log only if it ends before its epoch did. */
export function withinEpoch(history: EpochEntry[], entry: { leaderEpoch: number; lastOffset: number }): boolean {
  return entry.lastOffset < endOffsetFor(history, entry.leaderEpoch, Number.MAX_SAFE_INTEGER);
}
