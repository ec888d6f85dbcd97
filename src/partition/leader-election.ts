import { computeHighWatermark, type PartitionState } from './partition-state.js';
import { assignEpoch, endOffsetFor } from './epoch-history.js';

export interface Election {
  state: PartitionState;
  /** True when the new leader came from outside the ISR: acknowledged records may be lost. */
  unclean: boolean;
  /** Offsets in [newLogEnd, previous HW) that an unclean election threw away. */
  lostFrom?: number;
}

/**
 * Picks a new leader when the current leader's store has failed: the first live ISR member in
 * replica order, or with unclean.leader.election.enable any live replica. The epoch is bumped and
 * the history records where it starts (the new leader's log end); every replica is truncated to
 * the end offset of the epoch it last followed, as the history says. Undefined: no candidate.
 */
export function electLeader(
  s: PartitionState,
  isLive: (replica: number) => boolean,
  uncleanAllowed: boolean,
): Election | undefined {
  const inOrder = (rs: number[]) => s.replicas.filter((r) => rs.includes(r) && r !== s.leader && isLive(r));
  let candidates = inOrder(s.isr);
  let unclean = false;
  if (candidates.length === 0 && uncleanAllowed) {
    candidates = inOrder(s.replicas);
    unclean = candidates.length > 0;
  }
  const leader = candidates[0];
  if (leader === undefined) return undefined;

  const leaderEpoch = s.leaderEpoch + 1;
  const start = s.replicaLeo[String(leader)] ?? 0;
  const epochHistory = assignEpoch(s.epochHistory, leaderEpoch, start);
  const end = endOffsetFor(epochHistory, s.leaderEpoch, start);
  const replicaLeo = Object.fromEntries(Object.entries(s.replicaLeo).map(([r, leo]) => [r, Math.min(leo, end)]));
  const isr = unclean ? [leader] : s.isr.filter((r) => r !== s.leader);
  const lastCommit = s.lastCommit && s.lastCommit.lastOffset < start ? s.lastCommit : undefined;
  const next: PartitionState = {
    ...s,
    leader,
    leaderEpoch,
    epochHistory,
    replicaLeo,
    isr,
    highWatermark: Math.min(s.highWatermark, start),
    ...(lastCommit ? { lastCommit } : { lastCommit: undefined }),
  };
  next.highWatermark = computeHighWatermark(next);
  return { state: next, unclean, ...(unclean && start < s.highWatermark ? { lostFrom: start } : {}) };
}
