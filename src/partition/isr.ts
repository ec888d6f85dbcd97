import { computeHighWatermark, logEndOffset, type PartitionState } from './partition-state.js';

/**
 * In-sync replica set changes, as pure functions of the partition state. Every change is then
 * written with one conditional write (version, so also leader epoch) by the caller.
 */

/** Removes followers from the ISR (never the leader: losing the leader is an election). */
export function shrinkIsr(s: PartitionState, remove: Iterable<number>): PartitionState {
  const out = new Set([...remove].filter((r) => r !== s.leader));
  if (![...out].some((r) => s.isr.includes(r))) return s;
  const next = { ...s, isr: s.isr.filter((r) => !out.has(r)) };
  return { ...next, highWatermark: computeHighWatermark(next) };
}

/** Kafka's replica.lag.time.max.ms default: how long a follower may stay behind before it leaves the ISR. */
export const DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000;

/** Followers in the ISR that have been behind the leader for longer than replica.lag.time.max.ms. */
export function laggingFollowers(s: PartitionState, now: number, lagTimeMaxMs: number): number[] {
  const leo = logEndOffset(s);
  return s.isr.filter((r) => {
    if (r === s.leader || (s.replicaLeo[String(r)] ?? 0) >= leo) return false;
    const since = s.lastCaughtUpMs?.[String(r)] ?? 0;
    return now - since > lagTimeMaxMs;
  });
}

/** Records that follower `r` now holds everything below `leo`; it rejoins the ISR once at the HW. */
export function followerReached(s: PartitionState, r: number, leo: number, now: number): PartitionState {
  const replicaLeo = { ...s.replicaLeo, [String(r)]: Math.max(s.replicaLeo[String(r)] ?? 0, leo) };
  const caughtUp = replicaLeo[String(r)]! >= logEndOffset(s);
  const lastCaughtUpMs = caughtUp ? { ...s.lastCaughtUpMs, [String(r)]: now } : s.lastCaughtUpMs;
  const rejoin = !s.isr.includes(r) && s.replicas.includes(r) && replicaLeo[String(r)]! >= s.highWatermark && caughtUp;
  const isr = rejoin ? s.replicas.filter((x) => x === r || s.isr.includes(x)) : s.isr;
  const next: PartitionState = { ...s, replicaLeo, isr, ...(lastCaughtUpMs ? { lastCaughtUpMs } : {}) };
  return { ...next, highWatermark: computeHighWatermark(next) };
}
