/**
 * Fold by age (docs/architecture.md, "One conditional write per request", Lifetime): a shard's
 * entries expire a week after they are written, so every entry must be folded long before,
 * however idle the shard is afterwards. Before a process writes an entry, a durable timer is in
 * place (the scheduler fires it: src/maintenance) that folds the shard at most FOLD_WITHIN_MS
 * after the entry's time: found by time in the timers' slots, with no search over the shards.
 *
 * A process arms one timer per shard and then none until its entries are within half that of the
 * timer's expiry (one arming per hour or so per shard per process, not per request), so the timer
 * it armed fires after every entry it writes meanwhile (an entry is written seconds after its
 * time). Expiries lie on a grid (`foldExpiry`), so the processes that write a shard within one step
 * of it arm the same timer item: each reads it first and writes it only when it is not there (on
 * AWS each Lambda environment is a process, and each would otherwise write a timer of its own).
 * The timer is written before the entry: a process that dies between the two leaves a timer that
 * finds nothing to fold, never an entry without one. Scheduling is idempotent (the same item).
 */
import type { MetadataStore } from '../storage/ports.js';
import { DEFAULT_TIMER_SLOT_MS, DurableTimers } from '../timer/durable-timers.js';
import { perStore, shardKey } from './process-cache.js';

/** The durable timer kind whose handler folds a shard. */
export const FOLD_SHARD_KIND = 'fold-shard';
/** An entry is folded within this long of its time while the scheduler runs (the TTL is a week). */
export const FOLD_WITHIN_MS = 2 * 3_600_000;

/** A fold timer's payload: the shard of one topic incarnation. */
export interface FoldDue {
  topic: string;
  topicId: string;
  shard: number;
}

/**
 * The step of the expiries' grid: a timer armed at `at` expires between FOLD_WITHIN_MS minus a step
 * and FOLD_WITHIN_MS after it, so it is reused for at least half of FOLD_WITHIN_MS minus a step.
 */
const FOLD_GRID_MS = FOLD_WITHIN_MS / 4;

/** The expiry of a fold timer armed at `at`: on the grid, at most FOLD_WITHIN_MS after `at`. */
export function foldExpiry(at: number): number {
  return Math.floor((at + FOLD_WITHIN_MS) / FOLD_GRID_MS) * FOLD_GRID_MS;
}

/** Per shard, the fold timer this process armed last: its expiry and its write. */
const armed = perStore<{ expiry: number; written: Promise<void> }>(10_000);

/**
 * Resolves once a fold timer of the shard fires after an entry of time `at` is written: at once
 * when this process armed one that fires late enough, else after writing one. A failed write is
 * tried again by the next caller. `timerSlotMs` must be the scheduler's (its maintenance option).
 */
export function watchFold(
  metadata: MetadataStore,
  topic: { name: string; id: string },
  shard: number,
  at: number,
  timerSlotMs = DEFAULT_TIMER_SLOT_MS,
): Promise<void> {
  const byShard = armed(metadata);
  const key = shardKey(topic, shard);
  const last = byShard.get(key);
  if (last && at <= last.expiry - FOLD_WITHIN_MS / 2) return last.written;
  const expiry = foldExpiry(at);
  const timer = {
    kind: FOLD_SHARD_KIND,
    id: `${topic.id}.${shard}`,
    expiry,
    payload: { topic: topic.name, topicId: topic.id, shard } satisfies FoldDue,
  };
  const now = { expiry, written: new DurableTimers(metadata, { slotMs: timerSlotMs }).scheduleOnce(timer, at) };
  byShard.set(key, now);
  now.written.catch(() => {
    if (byShard.get(key) === now) byShard.delete(key);
  });
  return now.written;
}
